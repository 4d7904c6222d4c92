// File: metrics_endpoint.h
//
// The Prometheus scrape endpoint: a small HTTP/1.1 server that answers
// `GET /metrics` with a registry in the text exposition format (version
// 0.0.4), and `GET /healthz` and `/readyz` for probes, and closes the
// connection after each response.
//
// Why not prometheus-cpp's Exposer: its civetweb serves each connection on
// one of a few threads until the client sends a request, so two idle TCP
// connections blocked every scrape for 30 s, Debian's civetweb cannot listen
// on IPv6, and it took about 2 s to stop after it had served a request. Here
// one thread polls every connection, so an idle or slow client holds only
// its own socket, for at most `request_timeout`; the listener takes IPv4 and
// IPv6 addresses; Stop() returns at once.
//
// Limits: a request head of at most 8 KiB, `max_connections` open at once
// (the oldest is closed to make room for a new one), and `request_timeout`
// from accept to the end of the response.
//
// Example:
//   absl::StatusOr<std::unique_ptr<MetricsEndpoint>> endpoint =
//       MetricsEndpoint::Start("[::1]:0", registry);
//   ... (*endpoint)->port() ...
//
// Thread-safe: the registry is read on the endpoint's thread, which the
// registry must outlive (it is shared).
#ifndef SLACKSWAP_SERVER_METRICS_ENDPOINT_H_
#define SLACKSWAP_SERVER_METRICS_ENDPOINT_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "prometheus/registry.h"

namespace slackswap {

struct MetricsEndpointOptions {
  int max_connections = 64;
  absl::Duration request_timeout = absl::Seconds(5);
  // Called on the endpoint's thread before each scrape collects the
  // registry (to read values that are sampled, not counted).
  std::function<void()> before_scrape;
  // Probes over plain HTTP, for orchestrators whose gRPC probes cannot reach
  // a TLS port: GET /healthz is 200 while the process serves HTTP at all;
  // GET /readyz is 200 while `ready` says so and 503 after (draining). Not
  // set: /readyz is 200 too.
  std::function<bool()> ready;
};

class MetricsEndpoint {
 public:
  // Listens on `address`: "HOST:PORT" with an IPv4 address or a host name,
  // or "[IPV6]:PORT"; port 0 picks one. UNAVAILABLE naming the address when
  // it cannot listen there, INVALID_ARGUMENT when it is not of that form.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const std::string& address,
      std::shared_ptr<prometheus::Registry> registry,
      const MetricsEndpointOptions& options = MetricsEndpointOptions());
  // Stops: closes the listener and every connection, joins the thread.
  ~MetricsEndpoint();

  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  int port() const { return port_; }

 private:
  MetricsEndpoint() = default;
  void Run();

  std::shared_ptr<prometheus::Registry> registry_;
  MetricsEndpointOptions options_;
  int listen_fd_ = -1;
  int wake_read_fd_ = -1;
  int wake_write_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace slackswap

#endif  // SLACKSWAP_SERVER_METRICS_ENDPOINT_H_
