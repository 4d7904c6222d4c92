// File: allocator_budget.h
//
// Planning under PyTorch's caching allocator (simulator/caching_allocator.h):
// reporting the reserved bytes a plan leads to, and budgeting them.
//
// A policy plans against resident bytes. With a reserved budget R, the plan
// for R may reserve more than R (rounding, and cached blocks too small to
// reuse), so PlanUnderAllocator plans again for a smaller resident budget,
// less by the overshoot each time, until the plan's replay under the reserved
// budget completes, at the profiled speeds and at ReservedCheckScalings(): at
// most kReservedBudgetRounds plans. Once one completes there after a round
// that did not, the rounds bisect between the two resident budgets (at most
// kReservedRefinements of them), and the fastest plan that completes is the
// answer. If none completes at all of those speeds,
// the first that completed at the profiled ones is the answer. (Reserved
// bytes depend on the order in which allocations and frees interleave, which
// the speeds change: the event model's any-speed proof covers resident bytes
// only; these checks stand in for it, docs/planner.md.) The result's replay
// is that replay (Simulate with the same budget and allocator model
// reproduces it), and planned_budget_bytes says which resident budget the
// plan was made for.
//
// Example:
//   Physics physics;
//   physics.allocator = AllocatorKind::kCaching;
//   physics.budget_reserved = true;
//   absl::StatusOr<PlanningResult> result = PlanUnderAllocator(
//       trace, hardware, budget, physics,
//       [&](int64_t b) { return PlanSlackSwap(trace, hardware, b, options); });
#ifndef SLACKSWAP_PLANNER_ALLOCATOR_BUDGET_H_
#define SLACKSWAP_PLANNER_ALLOCATOR_BUDGET_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/planning_result.h"
#include "simulator/caching_allocator.h"
#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/physics.h"
#include "simulator/trace.h"

namespace slackswap {

inline constexpr int kReservedBudgetRounds = 8;
// Of those, at most this many bisect once a plan fits (see the .cc).
inline constexpr int kReservedRefinements = 3;

// The speeds a plan for a reserved budget must also complete at: the four
// robustness scalings (simulator/speed_scaling.h) and copies that end at
// once (the link infinitely fast, as the runtime's copies on a CPU).
const std::vector<SpeedScaling>& ReservedCheckScalings();

// Plans for a resident budget: a policy.
using BudgetedPlanner =
    std::function<absl::StatusOr<PlanningResult>(int64_t budget_bytes)>;

// With physics.allocator kNone, plan(budget_bytes). Otherwise the plan for
// `budget_bytes` with its replay under the allocator (the same times, with
// the reserved peak), or under a reserved budget as the header comment says.
// An answer with no plan within the reserved budget is infeasible with the
// last plan tried and its replay. The lower bound is the one for
// `budget_bytes` (a reserved budget is at least as tight as a resident one).
absl::StatusOr<PlanningResult> PlanUnderAllocator(const Trace& trace,
                                                  const Hardware& hardware,
                                                  int64_t budget_bytes,
                                                  const Physics& physics,
                                                  const BudgetedPlanner& plan);

// Simulation options for a replay under `physics` (the node's and the
// allocator's) and `budget_bytes`.
SimulationOptions AllocatorReplayOptions(int64_t budget_bytes,
                                         const Physics& physics,
                                         bool per_layer_barriers);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_ALLOCATOR_BUDGET_H_
