#include "server/server.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "base/file.h"
#include "grpc/health/v1/health.pb.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace slackswap {
namespace {

// The file a TLS flag names; an error names the flag.
absl::StatusOr<std::string> ReadFlagFile(const std::string& path,
                                         const char* flag) {
  absl::StatusOr<std::string> bytes = ReadFileBytes(path);
  if (!bytes.ok())
    return absl::NotFoundError(
        absl::StrCat(flag, ": ", bytes.status().message()));
  return bytes;
}

// The certificate chain and the key are PEM, the key is the certificate's,
// and the client CA (when given) holds a PEM certificate.
absl::Status CheckPem(const std::string& cert_pem, const std::string& key_pem,
                      const std::string& ca_pem) {
  auto read_x509 = [](const std::string& pem) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    X509* x509 = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    return x509;
  };
  X509* cert = read_x509(cert_pem);
  if (cert == nullptr) {
    ERR_clear_error();
    return absl::InvalidArgumentError("tls_cert: no PEM certificate");
  }
  BIO* bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  absl::Status status;
  if (key == nullptr) {
    status = absl::InvalidArgumentError("tls_key: no PEM private key");
  } else if (X509_check_private_key(cert, key) != 1) {
    status = absl::InvalidArgumentError(
        "tls_key: not the key of the certificate in tls_cert");
  }
  EVP_PKEY_free(key);
  X509_free(cert);
  ERR_clear_error();
  if (!status.ok() || ca_pem.empty()) return status;
  X509* ca = read_x509(ca_pem);
  ERR_clear_error();
  if (ca == nullptr)
    return absl::InvalidArgumentError("tls_client_ca: no PEM certificate");
  X509_free(ca);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(
    const ServerOptions& o) {
  if (o.tls_cert_file.empty() && o.tls_key_file.empty()) {
    if (!o.tls_client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "tls_client_ca needs tls_cert and tls_key");
    }
    return grpc::InsecureServerCredentials();
  }
  if (o.tls_cert_file.empty() || o.tls_key_file.empty()) {
    return absl::InvalidArgumentError("tls_cert and tls_key go together");
  }
  // Read and checked once here, so that a missing, unreadable or broken
  // file fails the start with a message naming its flag (the watcher below
  // would only log it, and every handshake would fail).
  auto cert = ReadFlagFile(o.tls_cert_file, "tls_cert");
  if (!cert.ok()) return cert.status();
  auto key = ReadFlagFile(o.tls_key_file, "tls_key");
  if (!key.ok()) return key.status();
  std::string ca;
  if (!o.tls_client_ca_file.empty()) {
    auto bytes = ReadFlagFile(o.tls_client_ca_file, "tls_client_ca");
    if (!bytes.ok()) return bytes.status();
    ca = *std::move(bytes);
  }
  if (absl::Status pem = CheckPem(*cert, *key, ca); !pem.ok()) return pem;
  if (o.tls_reload_interval < absl::Seconds(1)) {
    return absl::InvalidArgumentError("tls_reload_interval must be >= 1s");
  }
  // The files are watched: a renewed certificate (cert-manager rotating a
  // Secret, say) is served to new connections within the interval, without
  // a restart.
  auto provider =
      std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
          o.tls_key_file, o.tls_cert_file, o.tls_client_ca_file,
          static_cast<unsigned int>(
              absl::ToInt64Seconds(o.tls_reload_interval)));
  grpc::experimental::TlsServerCredentialsOptions tls(provider);
  tls.watch_identity_key_cert_pairs();
  if (!o.tls_client_ca_file.empty()) {
    tls.watch_root_certs();
    tls.set_cert_request_type(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  }
  return grpc::experimental::TlsServerCredentials(tls);
}

}  // namespace

absl::StatusOr<std::unique_ptr<PlanningServer>> PlanningServer::Start(
    const ServerOptions& options) {
  if (options.max_concurrent_calls < 1) {
    return absl::InvalidArgumentError("max_concurrent_requests must be >= 1");
  }
  if (options.planning_threads < 0) {
    return absl::InvalidArgumentError("planning_threads must be >= 0");
  }
  if (options.max_message_bytes < 1024) {
    return absl::InvalidArgumentError("max_message_bytes must be >= 1024");
  }
  if (options.call_limits.max_memory_bytes < 0 ||
      options.call_limits.max_work < 0) {
    return absl::InvalidArgumentError(
        "max_call_memory_bytes and max_call_work must be >= 0 (0: no limit)");
  }
  if (options.min_client_ping_interval < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("min_client_ping_interval must be >= 0");
  }
  if (options.max_call_duration < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "max_call_duration must be >= 0 (0: no limit)");
  }
  auto credentials = Credentials(options);
  if (!credentials.ok()) return credentials.status();

  std::unique_ptr<PlanningServer> s(new PlanningServer());
  s->registry_ = std::make_shared<prometheus::Registry>();
  s->metrics_ = std::make_unique<ServerMetrics>(*s->registry_, options.version,
                                                options.revision);
  s->process_metrics_ = std::make_unique<ProcessMetrics>(*s->registry_);
  if (options.call_log) s->call_log_ = std::make_unique<CallLog>(stderr);
  if (!options.metrics_address.empty()) {
    MetricsEndpointOptions endpoint_options;
    ProcessMetrics* process = s->process_metrics_.get();
    endpoint_options.before_scrape = [process] { process->Update(); };
    PlanningServer* server = s.get();
    endpoint_options.ready = [server] { return server->serving_.load(); };
    absl::StatusOr<std::unique_ptr<MetricsEndpoint>> endpoint =
        MetricsEndpoint::Start(options.metrics_address, s->registry_,
                               endpoint_options);
    if (!endpoint.ok()) return endpoint.status();
    s->metrics_endpoint_ = *std::move(endpoint);
    s->metrics_port_ = s->metrics_endpoint_->port();
  }
  s->service_ = std::make_unique<PlannerServiceImpl>(
      options.max_concurrent_calls, options.planning_threads, s->metrics_.get(),
      options.call_limits, options.max_call_duration, options.max_message_bytes,
      s->call_log_.get(),
      options.compress_responses ? kCompressResponsesFrom : 0);
  s->metrics_->SetCapacity(options.max_concurrent_calls,
                           s->service_->planning_threads());

  grpc::EnableDefaultHealthCheckService(true);
  // Reflection describes what the generated descriptor pool holds. The
  // default health service is built without protobuf, so its descriptor is
  // added here: clients (grpcurl, Postman) can describe and call it too.
  grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen_address, *credentials, &s->port_);
  builder.RegisterService(s->service_.get());
  // The service refuses a request over the limit itself (counted, and named
  // in the error); gRPC drops those over twice the limit unread, uncounted.
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(std::min<int64_t>(2 * int64_t{options.max_message_bytes},
                                         std::numeric_limits<int>::max())));
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
      static_cast<int>(std::min<int64_t>(
          absl::ToInt64Milliseconds(options.min_client_ping_interval),
          std::numeric_limits<int>::max())));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Two processes must never share a port silently.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  if (options.max_connection_age > absl::ZeroDuration()) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                               static_cast<int>(absl::ToInt64Milliseconds(
                                   options.max_connection_age)));
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, 30000);
  }
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen_address,
                     " (in use, or not a local address?)"));
  }
  grpc::HealthCheckServiceInterface* health =
      s->server_->GetHealthCheckService();
  health->SetServingStatus(true);
  health->SetServingStatus(kServiceName, true);
  s->serving_ = true;
  return s;
}

std::shared_ptr<grpc::Channel> PlanningServer::InProcessChannel() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  return server_->InProcessChannel(args);
}

// How long a draining server waits, once its calls in flight are done, for
// a moment with no call for this long (refused ones count) before it shuts
// down: longer than a client's round trip on a local network, so that a
// client whose call just ended and calls again is refused, not cancelled.
// But clients that do not know of the drain (a static address list, no
// endpoint removal) go on calling: it waits at most kDrainQuietMax, then
// shuts down, and its GOAWAY moves them to the other replicas.
constexpr absl::Duration kDrainQuiet = absl::Milliseconds(100);
constexpr absl::Duration kDrainQuietMax = absl::Milliseconds(300);

void PlanningServer::Drain(absl::Duration grace) {
  if (drained_) return;
  drained_ = true;
  serving_ = false;
  // NOT_SERVING for every service, and no later change.
  server_->GetHealthCheckService()->Shutdown();
  // gRPC's shutdown ends a call that arrives while it runs, before the
  // client has its GOAWAY, with CANCELLED, which clients do not retry. So the
  // service refuses new calls itself first, with UNAVAILABLE (retried), and
  // the shutdown starts once the calls in flight are done and then none has
  // arrived for kDrainQuiet (or kDrainQuietMax has passed), or when the
  // grace ends.
  const absl::Time deadline = absl::Now() + grace;
  service_->StopAdmitting();
  while (absl::Now() < deadline && service_->inflight() > 0) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  const absl::Time done = absl::Now();
  const absl::Time quiet_by = std::min(deadline, done + kDrainQuietMax);
  while (absl::Now() < quiet_by &&
         absl::Now() - std::max(done, service_->last_arrival()) < kDrainQuiet) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  server_->Shutdown(absl::ToChronoTime(std::max(deadline, absl::Now())));
  server_->Wait();
}

PlanningServer::~PlanningServer() {
  if (server_ != nullptr) Drain(absl::ZeroDuration());
}

}  // namespace slackswap
