// File: planner_options.h
//
// Options and statistics shared by the SlackSwap planner's passes.
#ifndef SLACKSWAP_PLANNER_PLANNER_OPTIONS_H_
#define SLACKSWAP_PLANNER_PLANNER_OPTIONS_H_

#include <cstdint>

namespace slackswap {

enum class SwapRanking {
  // Decreasing recompute cost per byte; tensors that cannot be recomputed
  // first. SlackSwap's rule.
  kRecomputeCostPerByte,
  // Production order (the ablation).
  kProductionOrder,
};

struct PlannerOptions {
  // Offloads admitted by the link-budget pass must finish by
  // (1 - guard_fraction) * the forward time of the ideal timeline. The guard
  // absorbs what the ideal timeline ignores (rebuilds, prefetches and stalls
  // shifting the forward pass). 1% by default (docs/planner.md).
  double guard_fraction = 0.01;
  SwapRanking ranking = SwapRanking::kRecomputeCostPerByte;
  // Off: no swaps at all, recomputation only (the ablation).
  bool link_budget_pass = true;
  // vDNN-style per-layer barriers in the replay (the ablation).
  bool per_layer_barriers = false;
  // Bound on validation-and-repair rounds.
  int max_repair_iterations = 64;
};

struct PlannerStats {
  int32_t swaps_admitted = 0;     // by the link-budget pass
  int32_t recomputes_marked = 0;  // by the recompute pass
  int32_t blocks_recomputed = 0;  // by the block fallback
  int32_t repair_iterations = 0;  // replays in validation and repair
  int32_t repairs = 0;            // plan changes made by repair
  int64_t plans_evaluated = 0;    // candidate plans replayed (genetic searches)
};

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_PLANNER_OPTIONS_H_
