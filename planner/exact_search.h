// File: exact_search.h
//
// The branch and bound behind the exact optimum (optimum.h) and the anytime
// search's exact stage on small traces (anytime.h): over every decision
// (keep, swap, recompute) of every tensor and every prefetch issue point,
// judged by the event model. Depth first, over the tensors by decreasing
// size:
//   - a tensor of zero bytes is kept (keeping it costs nothing);
//   - a partial plan is cut when its recompute time alone (every recomputed
//     tensor is rebuilt once) reaches the best iteration found, when its
//     swaps' copies alone (LinkBound) do, or when the bytes that must be
//     resident at some op's start pass the budget (a kept tensor from its
//     production to its last use; any other from production to its last
//     forward use and from its first backward use on);
//   - for a complete decision vector, the issue points of its swaps are
//     searched as non-decreasing sequences in prefetch (deadline) order: the
//     H2D stream serves prefetches one after another in that order, so a
//     later prefetch's issue point below an earlier one's changes nothing;
//     the search of a vector stops when a replay has no stall. Where
//     EarliestIssueIsBest (simulator/event_model.h) holds, each vector is
//     replayed once, every swap at the earliest point of its window.
// The search starts from an incumbent (a plan that completes, or none) and
// keeps the first plan found at each improvement: the result is
// deterministic. Without per-layer barriers (the replays have none).
//
// Cost: exponential in the tensors (3^n decision vectors before cuts). It
// gives up (ExactSearchResult::finished false, its best plan so far kept)
// past its limits, counted in replays and in their work, never in time.
#ifndef SLACKSWAP_PLANNER_EXACT_SEARCH_H_
#define SLACKSWAP_PLANNER_EXACT_SEARCH_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "base/stop.h"
#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/physics.h"
#include "simulator/plan.h"
#include "simulator/trace.h"

namespace slackswap {

// The most tensors a trace may have for the anytime search's exact stage
// (anytime.h) and the exact optimum (optimum.h, kMaxOptimumTensors).
inline constexpr int32_t kMaxExactTensors = 16;

// A node of the tree (its bounds: the resident bytes over its tensor's ops,
// the swaps' copies), in the elements of replay_cost.h: what it costs next
// to a replay's elements and events (measured on 60 random small traces:
// about 35 ns a node, 5.4 ns an element; docs/planner.md, "The exact
// stage").
inline constexpr int64_t kExactNodeElements = 7;

struct ExactSearchOptions {
  // Give up past this many replays (0: no limit).
  int64_t max_replays = 0;
  // Give up past this much work, in thousandths of a nominal replay
  // (replay_cost.h): each replay at ReplayCostMillis, each node of the tree
  // at kExactNodeElements (0: no limit).
  int64_t max_cost_millis = 0;
  StopFunction should_stop;  // CANCELLED when it says true
  // The node physics every replay applies.
  Physics physics;
  // Where EarliestIssueIsBest holds, each decision vector replayed once,
  // with every swap at the earliest point of its window: no other issue
  // point is faster there (docs/planner.md, "Issue points at the earliest").
  // Off, every issue point is searched (to check that both give the same
  // optimum).
  bool earliest_issue = true;
};

struct ExactSearchResult {
  // The search was exhaustive: `best` is the optimum, or where nothing was
  // found, no plan fits the budget.
  bool finished = false;
  // A plan that completes was found (the incumbent counts).
  bool found = false;
  Plan best;
  SimulationResult replay;  // of `best`
  int64_t replays = 0;
  int64_t nodes = 0;        // of the tree, visited
  int64_t cost_millis = 0;  // the work, as max_cost_millis counts it
};

// `incumbent` (with its replay under `budget_bytes`) may be null; when it
// completes, the search only looks for faster plans, and returns it where
// none is. CANCELLED when should_stop says so.
absl::StatusOr<ExactSearchResult> SearchExact(
    const Trace& trace, const Hardware& hardware, int64_t budget_bytes,
    const ExactSearchOptions& options, const Plan* incumbent,
    const SimulationResult* incumbent_replay);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_EXACT_SEARCH_H_
