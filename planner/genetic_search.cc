#include "planner/genetic_search.h"

#include "base/status_macros.h"
#include "planner/basic_plans.h"
#include "planner/judge.h"

namespace slackswap {

absl::StatusOr<PlanningResult> PlanGeneticSearch(const Trace& trace,
                                                 const Hardware& hardware,
                                                 int64_t budget_bytes,
                                                 GeneticOptions options) {
  SLACKSWAP_ASSIGN_OR_RETURN(PlanningResult slackswap,
                             PlanSlackSwap(trace, hardware, budget_bytes, [&] {
                               PlannerOptions o;
                               o.should_stop = options.should_stop;
                               o.physics = options.physics;
                               return o;
                             }()));
  if (!slackswap.lower_bound.feasible) return slackswap;
  options.allow_recompute = true;
  options.per_layer_barriers = false;
  std::vector<Plan> seeds = {slackswap.plan, Plan::AllKeep(trace)};
  if (hardware.host_pinned_memory_bytes == 0)
    seeds.push_back(AllSwapPlan(trace));
  const GeneticResult search =
      RunGenetic(trace, hardware, budget_bytes, seeds, options);
  if (search.stopped) return PlanningStopped();
  PlanningResult result = Judge(trace, hardware, budget_bytes, search.best,
                                false, options.physics, slackswap.lower_bound);
  result.stats.plans_evaluated = search.evaluations;
  return result;
}

}  // namespace slackswap
