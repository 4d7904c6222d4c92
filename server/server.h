// File: server.h
//
// The planning server: PlannerService, grpc.health.v1 (overall and per
// service), server reflection, optional TLS and mutual TLS, Prometheus
// metrics on their own address, and graceful drain.
//
// Example:
//   ServerOptions options;
//   options.listen_address = "127.0.0.1:0";
//   absl::StatusOr<std::unique_ptr<PlanningServer>> server =
//   PlanningServer::Start(options);
//   ... (*server)->port() ...
//   (*server)->Drain(absl::Seconds(10));
#ifndef SLACKSWAP_SERVER_SERVER_H_
#define SLACKSWAP_SERVER_SERVER_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/registry.h"
#include "server/call_log.h"
#include "server/metrics.h"
#include "server/metrics_endpoint.h"
#include "server/planner_service.h"
#include "server/process_metrics.h"

namespace slackswap {

inline constexpr int64_t kCompressResponsesFrom = 16 << 10;

inline constexpr char kServiceName[] = "slackswap.v1.PlannerService";

struct ServerOptions {
  std::string listen_address = "0.0.0.0:50051";
  // Prometheus /metrics (metrics_endpoint.h): "HOST:PORT" or "[IPV6]:PORT".
  // Empty: no metrics endpoint.
  std::string metrics_address = "0.0.0.0:9464";
  // Largest request or response. The default carries traces far larger than a
  // GPT-2 XL trace with 50 times its layers (a few megabytes).
  int max_message_bytes = 32 << 20;
  int max_concurrent_calls = 8;
  // Per-call bounds on the memory and the work a call may ask for, checked
  // before it plans (service_core.h); 0: none.
  CallLimits call_limits = {256 << 20, int64_t{1} << 34};
  // Longest a call may run, whatever deadline its client set (0: none).
  absl::Duration max_call_duration = absl::Minutes(10);
  // Calls planned at once; admitted calls beyond it wait, in arrival order.
  // 0: the CPUs this process may use (affinity, a container's CPU limit).
  int planning_threads = 0;
  // PEM files; TLS is on when both are set, mutual TLS with a client CA.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  // Connections are closed after this long (0: never), so that clients
  // re-resolve and spread over new replicas.
  absl::Duration max_connection_age = absl::ZeroDuration();
  // Clients may ping this often (gRPC keepalive), with or without calls in
  // flight; more often, gRPC closes the connection (too_many_pings). gRPC's
  // own default is 5 minutes, which closes the connections of clients that
  // keep alive every 10 to 60 s, as many do, and fails their long calls.
  absl::Duration min_client_ping_interval = absl::Seconds(10);
  // How often the TLS files are checked for a renewed certificate.
  absl::Duration tls_reload_interval = absl::Seconds(60);
  // Compress responses of kCompressResponsesFrom bytes or more (gzip) for
  // clients that accept it (grpc-accept-encoding, which gRPC clients send):
  // a generated GPT-2 XL trace crosses in well under half its bytes. Smaller
  // responses (a plan's is a few KiB) are sent as they are: compressing them
  // would cost more CPU than it saves on the wire.
  bool compress_responses = true;
  // One JSON line per call on stderr (call_log.h).
  bool call_log = true;
  std::string version = "dev";
  // The source revision (git describe), for slackswap_build_info.
  std::string revision = "unknown";
};

class PlanningServer {
 public:
  static absl::StatusOr<std::unique_ptr<PlanningServer>> Start(
      const ServerOptions& options);
  ~PlanningServer();

  int port() const { return port_; }
  // 0 without a metrics endpoint.
  int metrics_port() const { return metrics_port_; }
  std::shared_ptr<grpc::Channel> InProcessChannel();
  // Calls admitted and not yet finished (running or waiting their turn).
  int inflight() const { return service_->inflight(); }
  int planning_threads() const { return service_->planning_threads(); }

  // Health goes NOT_SERVING, new calls get UNAVAILABLE, calls in flight get
  // `grace` to finish and are then cancelled; the gRPC server shuts down
  // once they are done and no call has arrived for 100 ms (or the grace
  // ends). Returns when all are done.
  void Drain(absl::Duration grace);

 private:
  PlanningServer() = default;

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<ServerMetrics> metrics_;
  std::unique_ptr<ProcessMetrics> process_metrics_;
  std::unique_ptr<CallLog> call_log_;
  // True from when the gRPC port listens to the start of a drain: /readyz
  // answers 503 outside it.
  std::atomic<bool> serving_{false};
  // After the metrics it reads: stopped first.
  std::unique_ptr<MetricsEndpoint> metrics_endpoint_;
  std::unique_ptr<PlannerServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  int metrics_port_ = 0;
  bool drained_ = false;
};

}  // namespace slackswap

#endif  // SLACKSWAP_SERVER_SERVER_H_
