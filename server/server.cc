#include "server/server.h"

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
  // Read once here, so that a missing or unreadable file fails the start
  // with a message naming its flag.
  for (const auto& [file, flag] : {std::pair{o.tls_cert_file, "tls_cert"},
                                   {o.tls_key_file, "tls_key"},
                                   {o.tls_client_ca_file, "tls_client_ca"}}) {
    if (file.empty()) continue;
    auto bytes = ReadFlagFile(file, flag);
    if (!bytes.ok()) return bytes.status();
  }
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
  return s;
}

std::shared_ptr<grpc::Channel> PlanningServer::InProcessChannel() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  return server_->InProcessChannel(args);
}

void PlanningServer::Drain(absl::Duration grace) {
  if (drained_) return;
  drained_ = true;
  serving_ = false;
  // NOT_SERVING for every service, and no later change.
  server_->GetHealthCheckService()->Shutdown();
  server_->Shutdown(
      std::chrono::system_clock::now() +
      std::chrono::milliseconds(absl::ToInt64Milliseconds(grace)));
  server_->Wait();
}

PlanningServer::~PlanningServer() {
  if (server_ != nullptr) Drain(absl::ZeroDuration());
}

}  // namespace slackswap
