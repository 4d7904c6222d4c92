// File: recompute_pass.h
//
// SlackSwap's pass 2: recompute the cheapest bytes. While the draft's peak
// exceeds the budget, it marks for recomputation the eligible tensor resident
// at the peak with the lowest recompute cost per byte of excess removed
// (cost / min(size, excess)). A tensor is eligible when it is kept, may be
// recomputed, is resident at the peak only because it is kept (its last
// forward use is before the peak and its need after it), and its rebuild
// chain stays inside its block: no recompute input and no recomputed
// dependent in another block is recomputed (a chain through a block's input
// would rebuild the blocks before it as well).
//
// When no tensor is eligible, it falls back to recomputing a whole block:
// every recomputable tensor one forward block produces, its outputs included,
// rebuilt from the block's input. It picks the block with the lowest
// recompute time per byte freed at the peak, and keeps the change only if the
// peak falls.
#ifndef SLACKSWAP_PLANNER_RECOMPUTE_PASS_H_
#define SLACKSWAP_PLANNER_RECOMPUTE_PASS_H_

#include <cstdint>
#include <string>

#include "planner/plan_draft.h"
#include "planner/planner_options.h"
#include "simulator/trace.h"

namespace slackswap {

class RecomputePass {
 public:
  // `trace` and `draft` must outlive the pass.
  RecomputePass(const Trace& trace, PlanDraft& draft);

  // Recomputes until the draft fits `budget_bytes` over the whole iteration
  // (true), or no candidate is left (false).
  bool Run(int64_t budget_bytes, PlannerStats& stats);

  // Recomputes the best candidate at `op` to remove up to `excess_bytes` there;
  // false if none. Used by repair when a replay waits for memory at `op`.
  bool RecomputeAt(int32_t op, int64_t excess_bytes, PlannerStats& stats);

 private:
  bool Eligible(int32_t t, int32_t op) const;
  int32_t BestTensor(int32_t op, int64_t excess_bytes);
  bool RecomputeBlock(int32_t op, PlannerStats& stats);
  int32_t FindAlive(int32_t i);

  const Trace& trace_;
  PlanDraft& draft_;
  // Recomputable tensors by recompute cost per byte, ascending; entries that
  // can never be candidates again are skipped through alive_next_
  // (union-find with path compression).
  std::vector<int32_t> by_cost_per_byte_;
  std::vector<int32_t> alive_next_;
  // Block index -> recomputable tensors its forward ops produce.
  std::vector<std::vector<int32_t>> block_tensors_;
};

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_RECOMPUTE_PASS_H_
