// File: frontier.h
//
// Planning across budgets: where no plan can fit (the proven floor), the
// smallest budget at which SlackSwap plans, and the reason an infeasible
// answer gives. The service's Frontier and an infeasible Plan use these.
#ifndef SLACKSWAP_PLANNER_FRONTIER_H_
#define SLACKSWAP_PLANNER_FRONTIER_H_

#include <cstdint>
#include <functional>
#include <vector>

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

// One point of a frontier: a budget and what planning at it gave.
struct FrontierPoint {
  int64_t budget_bytes = 0;
  bool planned = false;
  // When planned: the plan's replay.
  double throughput_ratio = 0;
  int64_t iteration_ns = 0;
  int64_t swapped_bytes = 0;
  int64_t recomputed_bytes = 0;
};

// Throughput against budget, from the proven floor up.
struct FrontierCurve {
  int64_t all_keep_peak_bytes = 0;
  int64_t proven_floor_bytes = 0;
  // The budgets asked for at or above the floor, and the smallest budget
  // SlackSwap meets (bisection to 1/1000 of the peak): ascending, distinct.
  std::vector<FrontierPoint> points;
  // With a target: the smallest budget found that reaches it (bisection
  // between the curve's points, to 1/1000 of the peak), if any does.
  bool target_reached = false;
  FrontierPoint smallest_budget;
};

// The frontier of `trace` at `fractions` of its all-keep peak (sorted,
// distinct, in (0, 1]), and with `target_throughput_ratio` > 0 the smallest
// budget that reaches it. `plan(budget)` plans at a budget (the caller's
// policy, options and stop); its errors pass through. At most
// fractions.size() + 11 plans, and 12 more with a target.
absl::StatusOr<FrontierCurve> ComputeFrontier(
    const Trace& trace, const std::vector<double>& fractions,
    double target_throughput_ratio,
    const std::function<absl::StatusOr<PlanningResult>(int64_t)>& plan);

// The anytime search of each plan ExplainInfeasible's bisection makes, in ms.
inline constexpr double kExplainSearchMs = 10;

// For an infeasible SlackSwap answer: sets result.proven_floor_bytes and
// result.smallest_planned_budget_bytes (bisection between the floor and the
// all-keep peak, to 1/10,000 of the peak) and appends both to the reason.
// About 15 more plans.
absl::Status ExplainInfeasible(const Trace& trace, const Hardware& hardware,
                               const PlannerOptions& options,
                               PlanningResult& result);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_FRONTIER_H_
