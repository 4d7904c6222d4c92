#include "client/backend.h"

#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/file.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "service/grpc_status.h"
#include "service/service_core.h"

namespace slackswap {
namespace {

class Local : public Backend {
 public:
  explicit Local(absl::Duration deadline) : deadline_(deadline) {}

 protected:
  absl::Status Invoke(Method method, const google::protobuf::Message& request,
                      google::protobuf::Message& response) override {
    const absl::Time end = absl::Now() + deadline_;
    const StopFunction stop = [end] { return absl::Now() > end; };
    return VisitMethod(method, [&](auto m) -> absl::Status {
      using Row = Rpc<decltype(m)::value>;
      absl::StatusOr<typename Row::Response> result = Row::Run(
          core_, static_cast<const typename Row::Request&>(request), stop);
      if (absl::IsCancelled(result.status())) {
        return absl::DeadlineExceededError(
            "the deadline passed before the work was done");
      }
      if (!result.ok()) return result.status();
      static_cast<typename Row::Response&>(response) = *std::move(result);
      return absl::OkStatus();
    });
  }

 private:
  absl::Duration deadline_;
  ServiceCore core_;
};

// Every method through one generic stub, by its path (service/rpcs.h).
class Remote : public Backend {
 public:
  Remote(std::shared_ptr<grpc::Channel> channel, absl::Duration deadline)
      : stub_(std::move(channel)), deadline_(deadline) {}

 protected:
  absl::Status Invoke(Method method, const google::protobuf::Message& request,
                      google::protobuf::Message& response) override {
    grpc::ClientContext context;
    context.set_deadline(
        std::chrono::system_clock::now() +
        std::chrono::milliseconds(absl::ToInt64Milliseconds(deadline_)));
    std::promise<grpc::Status> done;
    stub_.UnaryCall(&context, MethodPath(method), grpc::StubOptions(), &request,
                    &response,
                    [&done](grpc::Status status) { done.set_value(status); });
    const grpc::Status status = done.get_future().get();
    if (!status.ok()) return FromGrpcStatus(status);
    return absl::OkStatus();
  }

 private:
  grpc::TemplatedGenericStub<google::protobuf::Message,
                             google::protobuf::Message>
      stub_;
  absl::Duration deadline_;
};

}  // namespace

std::unique_ptr<Backend> LocalBackend(absl::Duration deadline) {
  return std::make_unique<Local>(deadline);
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(
    const ConnectionOptions& options) {
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      grpc::InsecureChannelCredentials();
  if (!options.ca_file.empty()) {
    grpc::SslCredentialsOptions ssl;
    auto ca = ReadFileBytes(options.ca_file);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
    if (!options.client_cert_file.empty() || !options.client_key_file.empty()) {
      auto cert = ReadFileBytes(options.client_cert_file);
      if (!cert.ok()) return cert.status();
      auto key = ReadFileBytes(options.client_key_file);
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *cert;
      ssl.pem_private_key = *key;
    }
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  if (!options.retries) args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  if (!options.server_name.empty())
    args.SetSslTargetNameOverride(options.server_name);
  return grpc::CreateCustomChannel(options.address, credentials, args);
}

absl::StatusOr<std::unique_ptr<Backend>> RemoteBackend(
    const ConnectionOptions& options) {
  auto channel = MakeChannel(options);
  if (!channel.ok()) return channel.status();
  return std::unique_ptr<Backend>(
      std::make_unique<Remote>(*channel, options.deadline));
}

}  // namespace slackswap
