#include "planner/planner_proto.h"

#include <cmath>

#include "base/field_violations.h"
#include "simulator/proto_convert.h"
#include "simulator/schedule.h"

namespace slackswap {

absl::StatusOr<PlannerOptions> PlannerOptionsFromProto(
    const v1::PlannerOptions& proto) {
  FieldViolations v;
  PlannerOptions options;
  if (proto.has_guard_fraction()) {
    const double g = proto.guard_fraction();
    if (!std::isfinite(g) || g < 0 || g > 0.9) {
      v.Add("options.guard_fraction", "must be in [0, 0.9]");
    } else {
      options.guard_fraction = g;
    }
  }
  switch (proto.ranking()) {
    case v1::SWAP_RANKING_UNSPECIFIED:
    case v1::SWAP_RANKING_RECOMPUTE_COST_PER_BYTE:
      options.ranking = SwapRanking::kRecomputeCostPerByte;
      break;
    case v1::SWAP_RANKING_PRODUCTION_ORDER:
      options.ranking = SwapRanking::kProductionOrder;
      break;
    default:
      v.Add("options.ranking", "unknown value");
  }
  if (proto.has_link_budget_pass())
    options.link_budget_pass = proto.link_budget_pass();
  options.per_layer_barriers = proto.per_layer_barriers();
  if (proto.has_max_repair_iterations()) {
    if (proto.max_repair_iterations() < 1 ||
        proto.max_repair_iterations() > 1000) {
      v.Add("options.max_repair_iterations", "must be in [1, 1000]");
    } else {
      options.max_repair_iterations = proto.max_repair_iterations();
    }
  }
  options.linear_program_bound = proto.linear_program_bound();
  if (!v.empty()) return v.ToStatus();
  return options;
}

v1::PlanningReport PlanningReportToProto(const Trace& trace,
                                         const PlanningResult& result) {
  v1::PlanningReport report;
  report.set_outcome(result.feasible ? v1::PLAN_OUTCOME_PLANNED
                                     : v1::PLAN_OUTCOME_INFEASIBLE);
  report.set_reason(result.reason);
  *report.mutable_plan() =
      PlanToProto(result.plan, DeriveSchedule(trace, result.plan));
  *report.mutable_metrics() = MetricsToProto(result.replay);
  report.set_lower_bound_ns(result.lower_bound.iteration_ns);
  report.set_lower_bound_source(result.lower_bound.source ==
                                        BoundSource::kLinearProgram
                                    ? v1::LOWER_BOUND_SOURCE_LINEAR_PROGRAM
                                    : v1::LOWER_BOUND_SOURCE_FAST);
  report.set_proven_floor_bytes(result.proven_floor_bytes);
  report.set_smallest_planned_budget_bytes(
      result.smallest_planned_budget_bytes);
  report.set_gap_to_lower_bound(result.GapToLowerBound());
  v1::PlannerStatistics* stats = report.mutable_statistics();
  stats->set_swaps_admitted(result.stats.swaps_admitted);
  stats->set_recomputes_marked(result.stats.recomputes_marked);
  stats->set_blocks_recomputed(result.stats.blocks_recomputed);
  stats->set_repair_iterations(result.stats.repair_iterations);
  stats->set_repairs(result.stats.repairs);
  return report;
}

namespace {

struct PolicyPair {
  Policy policy;
  v1::Policy proto;
};

constexpr PolicyPair kPolicies[] = {
    {Policy::kIdeal, v1::POLICY_IDEAL},
    {Policy::kSlackSwap, v1::POLICY_SLACKSWAP},
    {Policy::kSlackSwapProductionOrder, v1::POLICY_SLACKSWAP_PRODUCTION_ORDER},
    {Policy::kSlackSwapNoLinkBudget, v1::POLICY_SLACKSWAP_NO_LINK_BUDGET},
    {Policy::kSlackSwapBarriers, v1::POLICY_SLACKSWAP_BARRIERS},
    {Policy::kVdnn, v1::POLICY_VDNN},
    {Policy::kSuperNeurons, v1::POLICY_SUPERNEURONS},
    {Policy::kSwapAdvisor, v1::POLICY_SWAPADVISOR},
    {Policy::kCheckpointing, v1::POLICY_CHECKPOINTING},
    {Policy::kGeneticSearch, v1::POLICY_GENETIC_SEARCH},
    {Policy::kOptimum, v1::POLICY_OPTIMUM},
};

}  // namespace

v1::Policy PolicyToProto(Policy policy) {
  for (const PolicyPair& p : kPolicies) {
    if (p.policy == policy) return p.proto;
  }
  return v1::POLICY_UNSPECIFIED;
}

absl::StatusOr<Policy> PolicyFromProto(v1::Policy policy,
                                       absl::string_view field) {
  for (const PolicyPair& p : kPolicies) {
    if (p.proto == policy) return p.policy;
  }
  return InvalidField(field,
                      "must be a known policy other than POLICY_UNSPECIFIED");
}

}  // namespace slackswap
