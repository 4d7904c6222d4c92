// File: slackswap.h
//
// The SlackSwap planner (arXiv 2610.13003): from one profiled iteration, a
// plan that keeps activation memory within a budget at the least iteration
// time it can find.
//
//   1. Pass 1 (link_budget_pass.h) spends the forward pass's link budget on
//      the tensors most expensive to recompute.
//   2. Pass 2 (recompute_pass.h) recomputes the cheapest remaining bytes until
//      the plan fits, falling back to whole blocks.
//   3. Validation and repair replays the plan in the event model and repairs
//      it: prefetches that arrive late are issued earlier (or become
//      recomputations), offloads that lag past the forward pass are dropped
//      (latest admitted first), and memory that does not fit is recomputed.
//
// Example:
//   absl::StatusOr<PlanningResult> result =
//       PlanSlackSwap(trace, hardware, budget_bytes, PlannerOptions());
//   if (result.ok() && result->feasible) Use(result->plan);
//
// Deterministic: the same inputs give the same plan, bit for bit (no hashing,
// clocks or threads). Thread-compatible.
#ifndef SLACKSWAP_PLANNER_SLACKSWAP_H_
#define SLACKSWAP_PLANNER_SLACKSWAP_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "planner/planner_options.h"
#include "planner/planning_result.h"
#include "simulator/hardware.h"
#include "simulator/trace.h"

namespace slackswap {

// The replays the improvement step (polish.h) may make from each of its
// starts on `trace`.
int64_t PolishReplays(const Trace& trace, const PlannerOptions& options);

// The most replays PlanSlackSwap makes for `trace`: its repair rounds, the
// final replay, the improvement step's (at most three starts of
// PolishReplays each) and the anytime search's. For callers that bound a
// call's work.
int64_t MaxSlackSwapReplays(const Trace& trace, const PlannerOptions& options);

// INVALID_ARGUMENT only for a trace and hardware whose times would overflow
// (CheckTimeRange), and CANCELLED (PlanningStopped) when options.should_stop
// said stop; every budget, however small, gives a result.
absl::StatusOr<PlanningResult> PlanSlackSwap(const Trace& trace,
                                             const Hardware& hardware,
                                             int64_t budget_bytes,
                                             const PlannerOptions& options);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_SLACKSWAP_H_
