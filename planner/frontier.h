// File: frontier.h
//
// Planning across budgets: where no plan can fit (the proven floor), the
// smallest budget at which SlackSwap plans, and the reason an infeasible
// answer gives. The service's Frontier and an infeasible Plan use these.
#ifndef SLACKSWAP_PLANNER_FRONTIER_H_
#define SLACKSWAP_PLANNER_FRONTIER_H_

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "planner/planner_options.h"
#include "planner/slackswap.h"
#include "simulator/hardware.h"
#include "simulator/trace.h"

namespace slackswap {

// The smallest budget in [lo, hi] at which `planned` is true, found by
// bisection to within `precision` bytes, assuming `planned(hi)`. Planning is
// nearly monotone in the budget; bisection finds a budget at which it plans
// with none found below it among those tried. Errors of `planned` pass
// through.
absl::StatusOr<int64_t> SmallestPlannedBudget(
    int64_t lo, int64_t hi, int64_t precision,
    const std::function<absl::StatusOr<bool>(int64_t)>& planned);

// For an infeasible SlackSwap answer: sets result.proven_floor_bytes and
// result.smallest_planned_budget_bytes (bisection between the floor and the
// all-keep peak, to 1/10,000 of the peak) and appends both to the reason.
// About 15 more plans.
absl::Status ExplainInfeasible(const Trace& trace, const Hardware& hardware,
                               const PlannerOptions& options,
                               PlanningResult& result);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_FRONTIER_H_
