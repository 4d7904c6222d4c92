// File: metrics.h
//
// The service's Prometheus metrics. Every label value comes from a fixed set
// created at start-up (method, status code, policy, outcome); no client string
// ever becomes a label. Names use base units and `_total` on counters.
//
// Per RPC (labels grpc_service, grpc_type "unary", grpc_method; every call
// counted, including those refused before they started: over the
// concurrency limit, or a request or response over --max_message_bytes):
//   grpc_server_handled_total{...,grpc_code}              counter
//   grpc_server_handling_seconds{...}                     histogram
//   slackswap_queue_wait_seconds{...}                     histogram
//   slackswap_request_bytes{...}                          histogram
//   slackswap_response_bytes{...}                         histogram
// Capacity and state:
//   slackswap_inflight_requests                           gauge
//   slackswap_max_concurrent_requests                     gauge
//   slackswap_planning_threads                            gauge
//   slackswap_build_info{version,revision}                gauge (1)
// Plans: every plan made, by the call it was made for (grpc_method Plan,
// Compare or Frontier):
//   slackswap_plans_total{grpc_method,policy,outcome}     counter (planned,
//                                                         infeasible,
//                                                         no_plan_found)
// Plan quality, of the plans that Plan calls return only (comparison entries
// and frontier points are what-ifs):
//   slackswap_plan_throughput_ratio{policy}               histogram
//   slackswap_plan_stall_seconds{policy}                  histogram
//   slackswap_plan_recompute_seconds{policy}              histogram
//   slackswap_plan_uplink_wait_seconds{policy}            histogram
//   slackswap_plan_contention_seconds{policy}             histogram
//   slackswap_plan_fixed_transfer_wait_seconds{policy}    histogram
//   slackswap_plan_reserved_bytes{policy}                 histogram (with an
//                                                         allocator model)
//   slackswap_plan_scaled_throughput_ratio{policy}        histogram (the
//                                                         worst at the four
//                                                         speed scalings)
//   slackswap_planning_seconds{policy}                    histogram
//   slackswap_plan_repair_iterations{policy}              histogram
//   slackswap_plan_lower_bound_gap_ratio{policy}          histogram
//   slackswap_swapped_bytes_total{policy}                 counter
//   slackswap_recomputed_bytes_total{policy}              counter
// The process (process_metrics.h): process_cpu_seconds_total,
// process_resident_memory_bytes, process_virtual_memory_bytes,
// process_open_fds, process_max_fds, process_start_time_seconds.
//
// Thread-safe.
#ifndef SLACKSWAP_SERVER_METRICS_H_
#define SLACKSWAP_SERVER_METRICS_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "grpcpp/support/status.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "service/rpcs.h"
#include "service/service_core.h"

namespace slackswap {

// The canonical status codes, 0 (OK) to UNAUTHENTICATED, the largest.
inline constexpr int kNumCodes =
    static_cast<int>(grpc::StatusCode::UNAUTHENTICATED) + 1;

class ServerMetrics : public PlanObserver {
 public:
  // Registers every family and series in `registry`, which must outlive this.
  ServerMetrics(prometheus::Registry& registry, const std::string& version,
                const std::string& revision = "unknown");

  // The service's capacity: calls admitted at once and planning threads.
  void SetCapacity(int max_concurrent_calls, int planning_threads);

  // Every call's request size, counted before anything else happens to it.
  void CallReceived(Method method, int64_t request_bytes);
  // The size of a response that was sent.
  void ResponseSent(Method method, int64_t response_bytes);
  void CallStarted() { inflight_->Increment(); }
  // An admitted call reached a planning thread after waiting `waited` for
  // the calls ahead of it.
  void CallDequeued(Method method, absl::Duration waited);
  void CallFinished(Method method, grpc::StatusCode code, absl::Duration took);
  // A call refused before it started (over the concurrency limit, or its
  // request over the size limit), `took` after it arrived.
  void CallRejected(Method method, grpc::StatusCode code, absl::Duration took);

  void Planned(Method call, Policy policy, const PlanningResult& result,
               absl::Duration took) override;

 private:
  // The constructor's parts, in the order the families are exposed: the
  // calls by method and code, the capacity and build gauges, the plans by
  // call, policy and outcome.
  void RegisterCalls(prometheus::Registry& registry);
  void RegisterCapacity(prometheus::Registry& registry,
                        const std::string& version,
                        const std::string& revision);
  void RegisterPlans(prometheus::Registry& registry);

  struct PerPolicy {
    // Per method that plans (null for the others), by PlanOutcome
    // (planned, infeasible, no_plan_found).
    std::array<std::array<prometheus::Counter*, 3>, kNumMethods> outcome{};
    prometheus::Histogram* throughput = nullptr;
    prometheus::Histogram* stall = nullptr;
    prometheus::Histogram* recompute = nullptr;
    prometheus::Histogram* uplink_wait = nullptr;
    prometheus::Histogram* fixed_wait = nullptr;
    prometheus::Histogram* contention = nullptr;
    prometheus::Histogram* reserved = nullptr;
    prometheus::Histogram* scaled = nullptr;
    prometheus::Histogram* planning = nullptr;
    prometheus::Histogram* repairs = nullptr;
    prometheus::Histogram* gap = nullptr;
    prometheus::Counter* swapped = nullptr;
    prometheus::Counter* recomputed = nullptr;
  };

  std::array<std::array<prometheus::Counter*, kNumCodes>, kNumMethods>
      handled_{};
  std::array<prometheus::Histogram*, kNumMethods> handling_{};
  std::array<prometheus::Histogram*, kNumMethods> queue_wait_{};
  std::array<prometheus::Histogram*, kNumMethods> request_bytes_{};
  std::array<prometheus::Histogram*, kNumMethods> response_bytes_{};
  prometheus::Gauge* inflight_ = nullptr;
  prometheus::Gauge* max_concurrent_ = nullptr;
  prometheus::Gauge* planning_threads_ = nullptr;
  std::array<PerPolicy, kNumPolicies> policies_{};
};

}  // namespace slackswap

#endif  // SLACKSWAP_SERVER_METRICS_H_
