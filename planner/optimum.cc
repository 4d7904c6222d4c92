#include "planner/optimum.h"

#include "absl/strings/str_cat.h"
#include "base/field_violations.h"
#include "base/status_macros.h"
#include "planner/exact_search.h"
#include "simulator/event_model.h"
#include "simulator/schedule.h"

namespace slackswap {

static_assert(kMaxOptimumTensors == kMaxExactTensors,
              "the exact optimum searches the traces the exact stage does");

absl::StatusOr<PlanningResult> PlanOptimum(const Trace& trace,
                                           const Hardware& hardware,
                                           int64_t budget_bytes,
                                           const OptimumOptions& options) {
  if (trace.num_tensors() > kMaxOptimumTensors) {
    return InvalidField(
        "trace.tensors",
        absl::StrCat("has ", trace.num_tensors(), " entries; the exact ",
                     "optimum searches traces of at most ", kMaxOptimumTensors,
                     " tensors"));
  }
  PlannerOptions slackswap;
  slackswap.should_stop = options.should_stop;
  slackswap.physics = options.physics;
  // The incumbent only has to be good: the search below proves the rest.
  slackswap.search_time_ms = kOptimumSeedSearchMs;
  SLACKSWAP_ASSIGN_OR_RETURN(
      PlanningResult seed,
      PlanSlackSwap(trace, hardware, budget_bytes, slackswap));
  ExactSearchOptions exact;
  exact.max_replays = options.max_replays;
  exact.should_stop = options.should_stop;
  exact.physics = options.physics;
  exact.earliest_issue = options.earliest_issue;
  SLACKSWAP_ASSIGN_OR_RETURN(
      const ExactSearchResult found,
      SearchExact(trace, hardware, budget_bytes, exact,
                  seed.feasible ? &seed.plan : nullptr, &seed.replay));
  if (!found.finished) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the exact search passed ", options.max_replays,
                     " replays without finishing; use a smaller trace"));
  }
  PlanningResult result;
  result.lower_bound = seed.lower_bound;
  result.stats.plans_evaluated = found.replays;
  if (found.found) {
    result.plan = found.best;
    result.replay = found.replay;
    return result;
  }
  result.feasible = false;
  result.proven_infeasible = true;
  result.reason = absl::StrCat(
      "no plan fits the budget of ", budget_bytes, " bytes: an exhaustive ",
      "search of every decision and issue point found none");
  result.plan = Plan::AllKeep(trace);
  SimulationOptions sim;
  sim.budget_bytes = budget_bytes;
  sim.physics = options.physics;
  result.replay = SimulateSchedule(trace, hardware, result.plan,
                                   DeriveSchedule(trace, result.plan), sim);
  return result;
}

}  // namespace slackswap
