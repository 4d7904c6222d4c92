#include "planner/judge.h"

#include "simulator/schedule.h"

namespace slackswap {

PlanningResult Judge(const Trace& trace, const Hardware& hardware,
                     int64_t budget_bytes, const Plan& plan,
                     bool per_layer_barriers, const Physics& physics,
                     const LowerBound& lower_bound) {
  PlanningResult result;
  result.plan = plan;
  result.lower_bound = lower_bound;
  result.per_layer_barriers = per_layer_barriers;
  // Policies build valid plans; a violation here is a policy bug, reported
  // as an infeasible result rather than replayed.
  const absl::Status valid =
      ValidatePlan(trace, hardware, plan, per_layer_barriers);
  if (!valid.ok()) {
    result.feasible = false;
    result.reason =
        "internal error: invalid plan: " + std::string(valid.message());
    return result;
  }
  SimulationOptions options;
  options.budget_bytes = budget_bytes;
  options.per_layer_barriers = per_layer_barriers;
  options.physics = physics;
  result.replay = SimulateSchedule(trace, hardware, plan,
                                   DeriveSchedule(trace, plan), options);
  result.feasible = result.replay.feasible;
  if (!result.feasible) result.reason = result.replay.infeasibility.reason;
  return result;
}

PlanningResult ProvenInfeasible(const Trace& trace, const Hardware& hardware,
                                int64_t budget_bytes, const Physics& physics,
                                const LowerBound& lower_bound) {
  PlanningResult result =
      Judge(trace, hardware, budget_bytes, Plan::AllKeep(trace), false, physics,
            lower_bound);
  result.feasible = false;
  result.reason = lower_bound.reason;
  return result;
}

}  // namespace slackswap
