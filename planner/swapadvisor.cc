#include "planner/swapadvisor.h"

#include "base/status_macros.h"
#include "planner/basic_plans.h"
#include "planner/judge.h"
#include "planner/vdnn.h"

namespace slackswap {

absl::StatusOr<PlanningResult> PlanSwapAdvisor(const Trace& trace,
                                               const Hardware& hardware,
                                               int64_t budget_bytes,
                                               GeneticOptions options) {
  const LowerBound bound = ComputeLowerBound(trace, hardware, budget_bytes);
  if (!bound.feasible)
    return ProvenInfeasible(trace, hardware, budget_bytes, options.physics,
                            bound);
  options.allow_recompute = false;
  options.per_layer_barriers = false;
  SLACKSWAP_ASSIGN_OR_RETURN(PlanningResult vdnn,
                             PlanVdnn(trace, hardware, budget_bytes,
                                      options.physics, options.should_stop));
  std::vector<Plan> seeds = {std::move(vdnn.plan), AllSwapPlan(trace),
                             Plan::AllKeep(trace)};
  if (hardware.host_pinned_memory_bytes > 0)
    seeds.resize(1);  // all-swap may pass the cap
  const GeneticResult search =
      RunGenetic(trace, hardware, budget_bytes, seeds, options);
  if (search.stopped) return PlanningStopped();
  PlanningResult result = Judge(trace, hardware, budget_bytes, search.best,
                                false, options.physics, bound);
  result.stats.plans_evaluated = search.evaluations;
  return result;
}

}  // namespace slackswap
