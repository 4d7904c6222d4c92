#include "server/metrics.h"

#include "absl/strings/str_cat.h"
#include "service/grpc_status.h"

namespace slackswap {
namespace {

prometheus::Histogram::BucketBoundaries Seconds() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
          0.25,   0.5,   1,      2.5,   5,    10,    30};
}

int CodeIndex(grpc::StatusCode code) {
  const int i = static_cast<int>(code);
  return i >= 0 && i < kNumCodes ? i
                                 : static_cast<int>(grpc::StatusCode::UNKNOWN);
}

}  // namespace

const char* MethodName(Method method) {
  switch (method) {
    case Method::kPlan:
      return "Plan";
    case Method::kSimulate:
      return "Simulate";
    case Method::kCompare:
      return "Compare";
    case Method::kFrontier:
      return "Frontier";
    case Method::kGenerateTrace:
      return "GenerateTrace";
  }
  return "";
}

ServerMetrics::ServerMetrics(prometheus::Registry& registry,
                             const std::string& version,
                             const std::string& revision) {
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
  for (int m = 0; m < kNumMethods; ++m) {
    const std::string method = MethodName(static_cast<Method>(m));
    for (int c = 0; c < kNumCodes; ++c) {
      handled_[m][c] = &handled.Add(
          {{"grpc_service", "slackswap.v1.PlannerService"},
           {"grpc_method", method},
           {"grpc_code", GrpcCodeName(static_cast<grpc::StatusCode>(c))}});
    }
    handling_[m] =
        &handling.Add({{"grpc_service", "slackswap.v1.PlannerService"},
                       {"grpc_method", method}},
                      Seconds());
    // Finer at the low end than Seconds(): an idle server hands a call over
    // within microseconds.
    queue_wait_[m] =
        &queue_wait.Add({{"grpc_service", "slackswap.v1.PlannerService"},
                         {"grpc_method", method}},
                        prometheus::Histogram::BucketBoundaries{
                            0.00001, 0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                            0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30});
  }
  inflight_ = &prometheus::BuildGauge()
                   .Name("slackswap_inflight_requests")
                   .Help(
                       "RPCs admitted and not finished: planning or waiting "
                       "their turn.")
                   .Register(registry)
                   .Add({});
  prometheus::BuildGauge()
      .Name("slackswap_build_info")
      .Help("Always 1; the labels say which build is running.")
      .Register(registry)
      .Add({{"version", version}, {"revision", revision}})
      .Set(1);

  auto& plans =
      prometheus::BuildCounter()
          .Name("slackswap_plans_total")
          .Help("Plans made, by policy and outcome (planned or infeasible).")
          .Register(registry);
  auto& throughput = prometheus::BuildHistogram()
                         .Name("slackswap_plan_throughput_ratio")
                         .Help(
                             "Predicted throughput of each feasible plan, as a "
                             "fraction of ideal.")
                         .Register(registry);
  auto& stall =
      prometheus::BuildHistogram()
          .Name("slackswap_plan_stall_seconds")
          .Help("Predicted stall per iteration of each feasible plan.")
          .Register(registry);
  auto& recompute =
      prometheus::BuildHistogram()
          .Name("slackswap_plan_recompute_seconds")
          .Help("Predicted recompute time per iteration of each feasible plan.")
          .Register(registry);
  auto& planning = prometheus::BuildHistogram()
                       .Name("slackswap_planning_seconds")
                       .Help("Time to make one plan.")
                       .Register(registry);
  auto& repairs = prometheus::BuildHistogram()
                      .Name("slackswap_plan_repair_iterations")
                      .Help("Replays in validation and repair per plan.")
                      .Register(registry);
  auto& gap = prometheus::BuildHistogram()
                  .Name("slackswap_plan_lower_bound_gap_ratio")
                  .Help(
                      "(predicted iteration - lower bound) / lower bound, per "
                      "feasible plan.")
                  .Register(registry);
  auto& swapped = prometheus::BuildCounter()
                      .Name("slackswap_swapped_bytes_total")
                      .Help("Bytes the plans made swap, summed over plans.")
                      .Register(registry);
  auto& recomputed =
      prometheus::BuildCounter()
          .Name("slackswap_recomputed_bytes_total")
          .Help("Bytes the plans made recompute, summed over plans.")
          .Register(registry);
  for (int p = 0; p < kNumPolicies; ++p) {
    const std::string policy = PolicyName(static_cast<Policy>(p));
    PerPolicy& m = policies_[p];
    m.planned = &plans.Add({{"policy", policy}, {"outcome", "planned"}});
    m.infeasible = &plans.Add({{"policy", policy}, {"outcome", "infeasible"}});
    m.throughput = &throughput.Add(
        {{"policy", policy}},
        prometheus::Histogram::BucketBoundaries{0.3, 0.5, 0.7, 0.8, 0.9, 0.95,
                                                0.97, 0.98, 0.99, 0.995, 1.0});
    m.stall = &stall.Add({{"policy", policy}}, Seconds());
    m.recompute = &recompute.Add({{"policy", policy}}, Seconds());
    m.planning = &planning.Add({{"policy", policy}}, Seconds());
    m.repairs = &repairs.Add(
        {{"policy", policy}},
        prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64});
    m.gap =
        &gap.Add({{"policy", policy}},
                 prometheus::Histogram::BucketBoundaries{
                     0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2, 5});
    m.swapped = &swapped.Add({{"policy", policy}});
    m.recomputed = &recomputed.Add({{"policy", policy}});
  }
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

void ServerMetrics::CallRejected(Method method, grpc::StatusCode code) {
  handled_[static_cast<int>(method)][CodeIndex(code)]->Increment();
}

void ServerMetrics::Planned(Policy policy, const PlanningResult& result,
                            absl::Duration took) {
  PerPolicy& m = policies_[static_cast<int>(policy)];
  m.planning->Observe(absl::ToDoubleSeconds(took));
  m.repairs->Observe(result.stats.repair_iterations);
  if (!result.feasible) {
    m.infeasible->Increment();
    return;
  }
  m.planned->Increment();
  const SimulationResult& r = result.replay;
  m.throughput->Observe(r.throughput_ratio);
  m.stall->Observe(static_cast<double>(r.stall_ns()) / 1e9);
  m.recompute->Observe(static_cast<double>(r.recompute_ns) / 1e9);
  m.gap->Observe(result.GapToLowerBound());
  m.swapped->Increment(static_cast<double>(r.swapped_bytes));
  m.recomputed->Increment(static_cast<double>(r.recomputed_bytes));
}

}  // namespace slackswap
