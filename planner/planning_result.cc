#include "planner/planning_result.h"

namespace slackswap {

double PlanningResult::GapToLowerBound() const {
  if (!feasible || lower_bound.iteration_ns <= 0) return 0;
  return static_cast<double>(replay.iteration_ns - lower_bound.iteration_ns) /
         static_cast<double>(lower_bound.iteration_ns);
}

PlanOutcome PlanningResult::Outcome() const {
  if (feasible) return PlanOutcome::kPlanned;
  if (!lower_bound.feasible || proven_infeasible) {
    return PlanOutcome::kInfeasible;
  }
  return PlanOutcome::kNoPlanFound;
}

}  // namespace slackswap
