// File: metrics.h
//
// The service's Prometheus metrics. Every label value comes from a fixed set
// created at start-up (method, status code, policy, outcome); no client string
// ever becomes a label. Names use base units and `_total` on counters.
//
//   grpc_server_handled_total{grpc_method,grpc_code}      counter
//   grpc_server_handling_seconds{grpc_method}             histogram
//   slackswap_queue_wait_seconds{grpc_method}             histogram
//   slackswap_inflight_requests                           gauge
//   slackswap_build_info{version,revision}                gauge (1)
//   slackswap_plans_total{policy,outcome}                 counter
//   slackswap_plan_throughput_ratio{policy}               histogram
//   slackswap_plan_stall_seconds{policy}                  histogram
//   slackswap_plan_recompute_seconds{policy}              histogram
//   slackswap_planning_seconds{policy}                    histogram
//   slackswap_plan_repair_iterations{policy}              histogram
//   slackswap_plan_lower_bound_gap_ratio{policy}          histogram
//   slackswap_swapped_bytes_total{policy}                 counter
//   slackswap_recomputed_bytes_total{policy}              counter
//
// Thread-safe.
#ifndef SLACKSWAP_SERVER_METRICS_H_
#define SLACKSWAP_SERVER_METRICS_H_

#include <array>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "grpcpp/support/status.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "service/service_core.h"

namespace slackswap {

// The RPCs, as metric labels; kGenerateTrace stays last.
enum class Method { kPlan, kSimulate, kCompare, kFrontier, kGenerateTrace };
inline constexpr int kNumMethods = static_cast<int>(Method::kGenerateTrace) + 1;
// The canonical status codes, 0 (OK) to UNAUTHENTICATED, the largest.
inline constexpr int kNumCodes =
    static_cast<int>(grpc::StatusCode::UNAUTHENTICATED) + 1;

const char* MethodName(Method method);

class ServerMetrics : public PlanObserver {
 public:
  // Registers every family and series in `registry`, which must outlive this.
  ServerMetrics(prometheus::Registry& registry, const std::string& version,
                const std::string& revision = "unknown");

  void CallStarted() { inflight_->Increment(); }
  // An admitted call reached a planning thread after waiting `waited` for
  // the calls ahead of it.
  void CallDequeued(Method method, absl::Duration waited);
  void CallFinished(Method method, grpc::StatusCode code, absl::Duration took);
  // A call refused before it started (over the concurrency limit).
  void CallRejected(Method method, grpc::StatusCode code);

  void Planned(Policy policy, const PlanningResult& result,
               absl::Duration took) override;

 private:
  struct PerPolicy {
    prometheus::Counter* planned = nullptr;
    prometheus::Counter* infeasible = nullptr;
    prometheus::Histogram* throughput = nullptr;
    prometheus::Histogram* stall = nullptr;
    prometheus::Histogram* recompute = nullptr;
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
  prometheus::Gauge* inflight_ = nullptr;
  std::array<PerPolicy, kNumPolicies> policies_{};
};

}  // namespace slackswap

#endif  // SLACKSWAP_SERVER_METRICS_H_
