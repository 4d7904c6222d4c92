// File: optimum.h
//
// The exact optimum for small traces: the fastest plan over every decision
// (keep, swap, recompute) of every tensor and every prefetch issue point,
// judged by the event model, or a proof that no plan fits the budget. It is
// the reference that SlackSwap, the baselines and the lower bounds are
// measured against (docs/planner.md, "The exact optimum").
//
// The branch and bound of exact_search.h, from SlackSwap's plan as the
// first incumbent. Ties keep the plan found first: the result is
// deterministic.
//
// Cost: exponential in the tensors (3^n decision vectors before cuts); the
// search stops with RESOURCE_EXHAUSTED past `max_replays`.
#ifndef SLACKSWAP_PLANNER_OPTIMUM_H_
#define SLACKSWAP_PLANNER_OPTIMUM_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "planner/planner_options.h"
#include "planner/slackswap.h"
#include "simulator/hardware.h"
#include "simulator/trace.h"

namespace slackswap {

// The anytime search (anytime.h) of the SlackSwap plan that seeds the exact
// search, in ms.
inline constexpr double kOptimumSeedSearchMs = 10;

// Traces with more tensors than this are refused (INVALID_ARGUMENT naming
// "trace.tensors").
inline constexpr int32_t kMaxOptimumTensors = 16;

struct OptimumOptions {
  // Replays the search may make before it gives up (RESOURCE_EXHAUSTED).
  int64_t max_replays = 20'000'000;
  StopFunction should_stop;
  // The node physics every replay applies.
  Physics physics;
  // Where EarliestIssueIsBest (simulator/event_model.h) holds, each decision
  // vector is replayed once, with every swap at the earliest point of its
  // window: no other issue point is faster there (docs/planner.md, "Issue
  // points at the earliest"). Off, every issue point is searched (to check
  // that both give the same optimum).
  bool earliest_issue = true;
};

// The optimum, or an infeasible result whose reason says that no plan fits
// (a proof: the search was exhaustive). stats.plans_evaluated counts the
// replays. CANCELLED when should_stop said so.
absl::StatusOr<PlanningResult> PlanOptimum(const Trace& trace,
                                           const Hardware& hardware,
                                           int64_t budget_bytes,
                                           const OptimumOptions& options);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_OPTIMUM_H_
