#include "server/metrics.h"

#include "absl/strings/str_cat.h"
#include "service/grpc_status.h"

namespace slackswap {
namespace {

prometheus::Histogram::BucketBoundaries Seconds() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
          0.25,   0.5,   1,      2.5,   5,    10,    30};
}

// 1 KiB to 1 GiB in powers of four: requests are mostly their trace.
prometheus::Histogram::BucketBoundaries Bytes() {
  prometheus::Histogram::BucketBoundaries bounds;
  for (double b = 1024; b <= double{1 << 30}; b *= 4) bounds.push_back(b);
  return bounds;
}

// Device memory: 256 MiB to 256 GiB.
prometheus::Histogram::BucketBoundaries DeviceBytes() {
  prometheus::Histogram::BucketBoundaries bounds;
  for (double b = double{1 << 28}; b <= 256.0 * (1 << 30); b *= 2)
    bounds.push_back(b);
  return bounds;
}

int CodeIndex(grpc::StatusCode code) {
  const int i = static_cast<int>(code);
  return i >= 0 && i < kNumCodes ? i
                                 : static_cast<int>(grpc::StatusCode::UNKNOWN);
}

}  // namespace

ServerMetrics::ServerMetrics(prometheus::Registry& registry,
                             const std::string& version,
                             const std::string& revision) {
  RegisterCalls(registry);
  RegisterCapacity(registry, version, revision);
  RegisterPlans(registry);
}

void ServerMetrics::RegisterCalls(prometheus::Registry& registry) {
  auto& handled =
      prometheus::BuildCounter()
          .Name("grpc_server_handled_total")
          .Help("RPCs completed on the server, by method and status code.")
          .Register(registry);
  auto& handling =
      prometheus::BuildHistogram()
          .Name("grpc_server_handling_seconds")
          .Help("Time from the start of an RPC to its response, by method.")
          .Register(registry);
  auto& queue_wait =
      prometheus::BuildHistogram()
          .Name("slackswap_queue_wait_seconds")
          .Help(
              "Time an admitted RPC waited for a planning thread, by method: "
              "the part of its latency that more replicas would remove.")
          .Register(registry);
  auto& request_bytes =
      prometheus::BuildHistogram()
          .Name("slackswap_request_bytes")
          .Help("Size of each request received, by method, refused or not.")
          .Register(registry);
  auto& response_bytes = prometheus::BuildHistogram()
                             .Name("slackswap_response_bytes")
                             .Help("Size of each response sent, by method.")
                             .Register(registry);
  for (int m = 0; m < kNumMethods; ++m) {
    const prometheus::Labels call = {
        {"grpc_service", "slackswap.v1.PlannerService"},
        {"grpc_type", "unary"},
        {"grpc_method", MethodName(static_cast<Method>(m))}};
    for (int c = 0; c < kNumCodes; ++c) {
      prometheus::Labels labels = call;
      labels["grpc_code"] = GrpcCodeName(static_cast<grpc::StatusCode>(c));
      handled_[m][c] = &handled.Add(labels);
    }
    handling_[m] = &handling.Add(call, Seconds());
    // Finer at the low end than Seconds(): an idle server hands a call over
    // within microseconds.
    queue_wait_[m] = &queue_wait.Add(
        call, prometheus::Histogram::BucketBoundaries{
                  0.00001, 0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                  0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30});
    request_bytes_[m] = &request_bytes.Add(call, Bytes());
    response_bytes_[m] = &response_bytes.Add(call, Bytes());
  }
}

void ServerMetrics::RegisterCapacity(prometheus::Registry& registry,
                                     const std::string& version,
                                     const std::string& revision) {
  inflight_ = &prometheus::BuildGauge()
                   .Name("slackswap_inflight_requests")
                   .Help(
                       "RPCs admitted and not finished: planning or waiting "
                       "their turn.")
                   .Register(registry)
                   .Add({});
  max_concurrent_ =
      &prometheus::BuildGauge()
           .Name("slackswap_max_concurrent_requests")
           .Help(
               "Calls admitted at once (--max_concurrent_requests)"
               ": more are refused with RESOURCE_EXHAUSTED.")
           .Register(registry)
           .Add({});
  planning_threads_ = &prometheus::BuildGauge()
                           .Name("slackswap_planning_threads")
                           .Help(
                               "Calls planned at once; admitted calls beyond "
                               "it wait in arrival order.")
                           .Register(registry)
                           .Add({});
  prometheus::BuildGauge()
      .Name("slackswap_build_info")
      .Help("Always 1; the labels say which build is running.")
      .Register(registry)
      .Add({{"version", version}, {"revision", revision}})
      .Set(1);
}

namespace {

// The families of the plans' metrics, registered in this order.
struct PlanFamilies {
  prometheus::Family<prometheus::Counter>& plans;
  prometheus::Family<prometheus::Histogram>& throughput;
  prometheus::Family<prometheus::Histogram>& stall;
  prometheus::Family<prometheus::Histogram>& recompute;
  prometheus::Family<prometheus::Histogram>& uplink_wait;
  prometheus::Family<prometheus::Histogram>& contention;
  prometheus::Family<prometheus::Histogram>& fixed_wait;
  prometheus::Family<prometheus::Histogram>& reserved;
  prometheus::Family<prometheus::Histogram>& scaled;
  prometheus::Family<prometheus::Histogram>& planning;
  prometheus::Family<prometheus::Histogram>& repairs;
  prometheus::Family<prometheus::Histogram>& gap;
  prometheus::Family<prometheus::Counter>& swapped;
  prometheus::Family<prometheus::Counter>& recomputed;
};

PlanFamilies RegisterPlanFamilies(prometheus::Registry& registry) {
  auto& plans =
      prometheus::BuildCounter()
          .Name("slackswap_plans_total")
          .Help(
              "Plans made, by the call they were made for (Plan, or a "
              "Compare entry or Frontier point), policy and outcome (planned; "
              "infeasible, proven below the memory floor; or no_plan_found, "
              "not proven).")
          .Register(registry);
  auto& throughput =
      prometheus::BuildHistogram()
          .Name("slackswap_plan_throughput_ratio")
          .Help(
              "Predicted throughput of each feasible plan a Plan "
              "call returned, as a fraction of ideal.")
          .Register(registry);
  auto& stall =
      prometheus::BuildHistogram()
          .Name("slackswap_plan_stall_seconds")
          .Help(
              "Predicted stall per iteration of each feasible plan a Plan "
              "call returned.")
          .Register(registry);
  auto& recompute =
      prometheus::BuildHistogram()
          .Name("slackswap_plan_recompute_seconds")
          .Help(
              "Predicted recompute time per iteration of each feasible plan a "
              "Plan call returned.")
          .Register(registry);
  auto& uplink_wait =
      prometheus::BuildHistogram()
          .Name("slackswap_plan_uplink_wait_seconds")
          .Help(
              "Predicted time per iteration that the transfers of each "
              "feasible plan a Plan call returned took beyond their own "
              "link's time, sharing the host uplink (0 without).")
          .Register(registry);
  auto& fixed_wait =
      prometheus::BuildHistogram()
          .Name("slackswap_plan_fixed_transfer_wait_seconds")
          .Help(
              "Predicted time per iteration that the compute stream of each "
              "feasible plan a Plan call returned waited for the job's own "
              "host transfers (the trace's fixed transfers: ZeRO-Offload, "
              "FSDP CPU offload; 0 without).")
          .Register(registry);
  auto& contention =
      prometheus::BuildHistogram()
          .Name("slackswap_plan_contention_seconds")
          .Help(
              "Predicted time per iteration that operators of each feasible "
              "plan a Plan call returned ran beyond their profiled durations, "
              "slowed by copies taking HBM bandwidth (0 without contention).")
          .Register(registry);
  auto& reserved =
      prometheus::BuildHistogram()
          .Name("slackswap_plan_reserved_bytes")
          .Help(
              "Predicted peak bytes the CUDA caching allocator reserves for "
              "each feasible plan a Plan call with an allocator model "
              "returned.")
          .Register(registry);
  auto& scaled =
      prometheus::BuildHistogram()
          .Name("slackswap_plan_scaled_throughput_ratio")
          .Help(
              "The lowest predicted throughput, as a fraction of ideal at its "
              "own speed, of each feasible plan a Plan call returned, replayed "
              "with the link at half and twice its speed and kernels 20% "
              "faster and slower: how sensitive the plans are to speeds.")
          .Register(registry);
  auto& planning = prometheus::BuildHistogram()
                       .Name("slackswap_planning_seconds")
                       .Help("Time to make the plan of one Plan call.")
                       .Register(registry);
  auto& repairs = prometheus::BuildHistogram()
                      .Name("slackswap_plan_repair_iterations")
                      .Help(
                          "Validation rounds that repaired something, per "
                          "plan of a Plan call.")
                      .Register(registry);
  auto& gap = prometheus::BuildHistogram()
                  .Name("slackswap_plan_lower_bound_gap_ratio")
                  .Help(
                      "(predicted iteration - lower bound) / lower bound, per "
                      "feasible plan a Plan call returned.")
                  .Register(registry);
  auto& swapped = prometheus::BuildCounter()
                      .Name("slackswap_swapped_bytes_total")
                      .Help(
                          "Bytes the plans of Plan calls swap, summed over "
                          "plans.")
                      .Register(registry);
  auto& recomputed =
      prometheus::BuildCounter()
          .Name("slackswap_recomputed_bytes_total")
          .Help("Bytes the plans of Plan calls recompute, summed over plans.")
          .Register(registry);
  return {plans,      throughput, stall,    recompute, uplink_wait,
          contention, fixed_wait, reserved, scaled,    planning,
          repairs,    gap,        swapped,  recomputed};
}

}  // namespace

void ServerMetrics::RegisterPlans(prometheus::Registry& registry) {
  const PlanFamilies f = RegisterPlanFamilies(registry);
  for (int p = 0; p < kNumPolicies; ++p) {
    const std::string policy = PolicyName(static_cast<Policy>(p));
    PerPolicy& m = policies_[p];
    for (int c = 0; c < kNumMethods; ++c) {
      if (!MethodPlans(static_cast<Method>(c))) continue;
      const std::string call = MethodName(static_cast<Method>(c));
      const char* outcomes[] = {"planned", "infeasible", "no_plan_found"};
      for (int o = 0; o < 3; ++o) {
        m.outcome[c][o] = &f.plans.Add({{"grpc_method", call},
                                        {"policy", policy},
                                        {"outcome", outcomes[o]}});
      }
    }
    const prometheus::Histogram::BucketBoundaries ratios{
        0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995, 1.0};
    m.throughput = &f.throughput.Add({{"policy", policy}}, ratios);
    m.scaled = &f.scaled.Add({{"policy", policy}}, ratios);
    m.stall = &f.stall.Add({{"policy", policy}}, Seconds());
    m.recompute = &f.recompute.Add({{"policy", policy}}, Seconds());
    m.uplink_wait = &f.uplink_wait.Add({{"policy", policy}}, Seconds());
    m.contention = &f.contention.Add({{"policy", policy}}, Seconds());
    m.fixed_wait = &f.fixed_wait.Add({{"policy", policy}}, Seconds());
    m.reserved = &f.reserved.Add({{"policy", policy}}, DeviceBytes());
    m.planning = &f.planning.Add({{"policy", policy}}, Seconds());
    m.repairs = &f.repairs.Add(
        {{"policy", policy}},
        prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64});
    m.gap = &f.gap.Add(
        {{"policy", policy}},
        prometheus::Histogram::BucketBoundaries{0.001, 0.005, 0.01, 0.02, 0.05,
                                                0.1, 0.25, 0.5, 1, 2, 5});
    m.swapped = &f.swapped.Add({{"policy", policy}});
    m.recomputed = &f.recomputed.Add({{"policy", policy}});
  }
}

void ServerMetrics::SetCapacity(int max_concurrent_calls,
                                int planning_threads) {
  max_concurrent_->Set(max_concurrent_calls);
  planning_threads_->Set(planning_threads);
}

void ServerMetrics::CallReceived(Method method, int64_t request_bytes) {
  request_bytes_[static_cast<int>(method)]->Observe(
      static_cast<double>(request_bytes));
}

void ServerMetrics::ResponseSent(Method method, int64_t response_bytes) {
  response_bytes_[static_cast<int>(method)]->Observe(
      static_cast<double>(response_bytes));
}

void ServerMetrics::CallFinished(Method method, grpc::StatusCode code,
                                 absl::Duration took) {
  inflight_->Decrement();
  const int m = static_cast<int>(method);
  handled_[m][CodeIndex(code)]->Increment();
  handling_[m]->Observe(absl::ToDoubleSeconds(took));
}

void ServerMetrics::CallDequeued(Method method, absl::Duration waited) {
  queue_wait_[static_cast<int>(method)]->Observe(absl::ToDoubleSeconds(waited));
}

void ServerMetrics::CallRejected(Method method, grpc::StatusCode code,
                                 absl::Duration took) {
  const int m = static_cast<int>(method);
  handled_[m][CodeIndex(code)]->Increment();
  handling_[m]->Observe(absl::ToDoubleSeconds(took));
}

void ServerMetrics::Planned(Method call, Policy policy,
                            const PlanningResult& result, absl::Duration took) {
  PerPolicy& m = policies_[static_cast<int>(policy)];
  const int c = static_cast<int>(call);
  static_assert(static_cast<int>(PlanOutcome::kNoPlanFound) == 2,
                "outcome labels are indexed by PlanOutcome");
  prometheus::Counter* outcome =
      m.outcome[c][static_cast<int>(result.Outcome())];
  if (outcome != nullptr) outcome->Increment();
  if (call != Method::kPlan) return;
  m.planning->Observe(absl::ToDoubleSeconds(took));
  m.repairs->Observe(result.stats.repair_iterations);
  if (!result.feasible) return;
  const SimulationResult& r = result.replay;
  m.throughput->Observe(r.throughput_ratio);
  m.stall->Observe(static_cast<double>(r.stall_ns()) / 1e9);
  m.recompute->Observe(static_cast<double>(r.recompute_ns) / 1e9);
  m.uplink_wait->Observe(static_cast<double>(r.uplink_wait_ns) / 1e9);
  m.contention->Observe(static_cast<double>(r.contention_ns) / 1e9);
  m.fixed_wait->Observe(static_cast<double>(r.fixed_transfer_wait_ns) / 1e9);
  if (r.peak_reserved_bytes > 0) {
    m.reserved->Observe(static_cast<double>(r.peak_reserved_bytes));
  }
  if (!r.scaled.empty()) {
    double worst = r.throughput_ratio;
    for (const ScaledReplay& s : r.scaled) {
      if (s.replayed) worst = std::min(worst, s.throughput_ratio);
    }
    m.scaled->Observe(worst);
  }
  m.gap->Observe(result.GapToLowerBound());
  m.swapped->Increment(static_cast<double>(r.swapped_bytes));
  m.recomputed->Increment(static_cast<double>(r.recomputed_bytes));
}

}  // namespace slackswap
