#include "client/backend.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/file.h"
#include "grpcpp/grpcpp.h"
#include "service/grpc_status.h"
#include "service/service_core.h"

namespace slackswap {
namespace {

class Local : public Backend {
 public:
  explicit Local(absl::Duration deadline) : deadline_(deadline) {}

  absl::StatusOr<v1::PlanResponse> Plan(const v1::PlanRequest& r) override {
    return Timed(core_.Plan(r, Stop()));
  }
  absl::StatusOr<v1::SimulateResponse> Simulate(
      const v1::SimulateRequest& r) override {
    return core_.Simulate(r, Stop());
  }
  absl::StatusOr<v1::CompareResponse> Compare(
      const v1::CompareRequest& r) override {
    return Timed(core_.Compare(r, Stop()));
  }
  absl::StatusOr<v1::FrontierResponse> Frontier(
      const v1::FrontierRequest& r) override {
    return Timed(core_.Frontier(r, Stop()));
  }
  absl::StatusOr<v1::GenerateTraceResponse> GenerateTrace(
      const v1::GenerateTraceRequest& r) override {
    return core_.GenerateTrace(r);
  }
  absl::StatusOr<v1::PlanNodeResponse> PlanNode(
      const v1::PlanNodeRequest& r) override {
    return Timed(core_.PlanNode(r, Stop()));
  }

 private:
  StopFunction Stop() {
    const absl::Time end = absl::Now() + deadline_;
    return [end] { return absl::Now() > end; };
  }
  template <typename T>
  absl::StatusOr<T> Timed(absl::StatusOr<T> result) {
    if (absl::IsCancelled(result.status())) {
      return absl::DeadlineExceededError(
          "the deadline passed before the work was done");
    }
    return result;
  }

  absl::Duration deadline_;
  ServiceCore core_;
};

class Remote : public Backend {
 public:
  Remote(std::shared_ptr<grpc::Channel> channel, absl::Duration deadline)
      : stub_(v1::PlannerService::NewStub(channel)), deadline_(deadline) {}

  absl::StatusOr<v1::PlanResponse> Plan(const v1::PlanRequest& r) override {
    return Call<v1::PlanResponse>(
        [&](grpc::ClientContext* c, v1::PlanResponse* out) {
          return stub_->Plan(c, r, out);
        });
  }
  absl::StatusOr<v1::SimulateResponse> Simulate(
      const v1::SimulateRequest& r) override {
    return Call<v1::SimulateResponse>(
        [&](grpc::ClientContext* c, v1::SimulateResponse* out) {
          return stub_->Simulate(c, r, out);
        });
  }
  absl::StatusOr<v1::CompareResponse> Compare(
      const v1::CompareRequest& r) override {
    return Call<v1::CompareResponse>(
        [&](grpc::ClientContext* c, v1::CompareResponse* out) {
          return stub_->Compare(c, r, out);
        });
  }
  absl::StatusOr<v1::FrontierResponse> Frontier(
      const v1::FrontierRequest& r) override {
    return Call<v1::FrontierResponse>(
        [&](grpc::ClientContext* c, v1::FrontierResponse* out) {
          return stub_->Frontier(c, r, out);
        });
  }
  absl::StatusOr<v1::GenerateTraceResponse> GenerateTrace(
      const v1::GenerateTraceRequest& r) override {
    return Call<v1::GenerateTraceResponse>(
        [&](grpc::ClientContext* c, v1::GenerateTraceResponse* out) {
          return stub_->GenerateTrace(c, r, out);
        });
  }
  absl::StatusOr<v1::PlanNodeResponse> PlanNode(
      const v1::PlanNodeRequest& r) override {
    return Call<v1::PlanNodeResponse>(
        [&](grpc::ClientContext* c, v1::PlanNodeResponse* out) {
          return stub_->PlanNode(c, r, out);
        });
  }

 private:
  template <typename T, typename F>
  absl::StatusOr<T> Call(const F& rpc) {
    grpc::ClientContext context;
    context.set_deadline(
        std::chrono::system_clock::now() +
        std::chrono::milliseconds(absl::ToInt64Milliseconds(deadline_)));
    T response;
    const grpc::Status status = rpc(&context, &response);
    if (!status.ok()) return FromGrpcStatus(status);
    return response;
  }

  std::unique_ptr<v1::PlannerService::Stub> stub_;
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
