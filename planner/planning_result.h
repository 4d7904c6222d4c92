// File: planning_result.h
//
// What a planning policy answers: the plan, its replay in the event model,
// the lower bound it is judged against, and the planner's statistics.
#ifndef SLACKSWAP_PLANNER_PLANNING_RESULT_H_
#define SLACKSWAP_PLANNER_PLANNING_RESULT_H_

#include <cstdint>
#include <string>

#include "planner/lower_bound.h"
#include "planner/planner_options.h"
#include "simulator/event_model.h"
#include "simulator/plan.h"

namespace slackswap {

// What a result says: a plan, a proof that no plan fits the budget, or
// neither (docs/planner.md, "Outcomes").
enum class PlanOutcome {
  kPlanned,
  // No plan fits: the lower bound proves the budget below the floor
  // (lower_bound.feasible false), or an exhaustive search found none
  // (proven_infeasible).
  kInfeasible,
  // The policy found no plan and nothing proves that none exists.
  kNoPlanFound,
};

struct PlanningResult {
  // False when no plan was found within the budget; `reason` says why. The
  // plan and replay are then those of the last attempt (replay infeasible).
  bool feasible = true;
  std::string reason;
  Plan plan;
  // The plan's replay in the event model: Simulate(trace, hardware, plan,
  // {budget, barriers}) reproduces it exactly.
  SimulationResult replay;
  LowerBound lower_bound;
  PlannerStats stats;
  // The replay used per-layer barriers (the policy's runtime has them).
  bool per_layer_barriers = false;
  // For an infeasible answer (frontier.h, ExplainInfeasible): the budget
  // below which no plan fits (proven), and the smallest at which SlackSwap
  // plans (0 when not searched).
  int64_t proven_floor_bytes = 0;
  int64_t smallest_planned_budget_bytes = 0;
  // Under an allocator model (allocator_budget.h): the resident budget the
  // plan was made for (below a reserved budget when that had to shrink);
  // 0 otherwise.
  int64_t planned_budget_bytes = 0;

  // Set by a search that proves no plan fits when it finds none (the exact
  // optimum's exhaustive search); the lower bound's proof is in lower_bound.
  bool proven_infeasible = false;

  // (replay - bound) / bound, or 0 when infeasible.
  double GapToLowerBound() const;
  PlanOutcome Outcome() const;
};

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_PLANNING_RESULT_H_
