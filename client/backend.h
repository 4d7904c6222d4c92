// File: backend.h
//
// Where the CLI's requests go: in-process (the same ServiceCore the server
// runs) or to a slackswap-server over gRPC. Both return the same messages, so
// every subcommand prints the same output either way.
#ifndef SLACKSWAP_CLIENT_BACKEND_H_
#define SLACKSWAP_CLIENT_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"
#include "grpcpp/channel.h"
#include "service/rpcs.h"

namespace slackswap {

class Backend {
 public:
  virtual ~Backend() = default;

  // The RPC `M` (a row of service/rpcs.h).
  template <Method M>
  absl::StatusOr<typename Rpc<M>::Response> Call(
      const typename Rpc<M>::Request& request) {
    typename Rpc<M>::Response response;
    const absl::Status status = Invoke(M, request, response);
    if (!status.ok()) return status;
    return response;
  }

 protected:
  // The RPC `method` with `request` and `response` of its row's message
  // types (Call<M> guarantees them).
  virtual absl::Status Invoke(Method method,
                              const google::protobuf::Message& request,
                              google::protobuf::Message& response) = 0;
};

struct ConnectionOptions {
  // "host:port", or any gRPC target ("dns:///name:port").
  std::string address;
  // PEM files. TLS is on when ca_file is set; client_cert and client_key add
  // a client certificate (mutual TLS).
  std::string ca_file;
  std::string client_cert_file;
  std::string client_key_file;
  // Overrides the name checked against the server certificate.
  std::string server_name;
  absl::Duration deadline = absl::Seconds(60);
  // gRPC's transparent retries. The load generator turns them off: each call
  // it counts is one attempt, and the retry layer costs client CPU that the
  // server it measures may share.
  bool retries = true;
};

// In-process; work stops when `deadline` passes (DEADLINE_EXCEEDED).
std::unique_ptr<Backend> LocalBackend(absl::Duration deadline);

// A channel with the TLS and message-size settings of `options`.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(
    const ConnectionOptions& options);

// Over gRPC. Errors keep the server's code and message.
absl::StatusOr<std::unique_ptr<Backend>> RemoteBackend(
    const ConnectionOptions& options);

}  // namespace slackswap

#endif  // SLACKSWAP_CLIENT_BACKEND_H_
