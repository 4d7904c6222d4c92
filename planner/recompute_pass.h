// File: recompute_pass.h
//
// SlackSwap's pass 2: recompute the cheapest bytes. While the draft's peak
// exceeds the budget, it marks for recomputation the eligible tensor resident
// at the peak with the lowest recompute cost per byte of excess removed
// (cost / min(size, excess)). A tensor is eligible when it is kept, may be
// recomputed, is resident at the peak only because it is kept (its last
// forward use is before the peak and its need after it), its rebuild chain
// stays inside its block (no recompute input and no recomputed dependent in
// another block is recomputed: a chain through a block's input would rebuild
// the blocks before it as well), and its rebuild chain (PlanDraft::
// RebuildChainSize: the tensor and the recomputed tensors its rebuild must
// rebuild first) holds at most kMaxRebuildChain tensors. A longer chain holds
// all its tensors at once before its need, and every change to it would walk
// the chain: planning would grow quadratically on long chains.
//
// When no tensor is eligible, a tensor whose rebuild chain crosses a block
// boundary may be chosen the same way (the block rule alone set aside; the
// chain still at most kMaxRebuildChain): a short chain into the previous
// block often frees the peak for far less than the whole block.
//
// When still none is, it falls back to recomputing a whole block:
// every recomputable tensor one forward block produces, its outputs included,
// rebuilt from the block's input. It compares the first 64 blocks that free
// bytes at the peak, in order of the whole block's recompute cost per byte,
// and picks the one with the lowest recompute time per byte freed at the
// peak whose rebuild chains (the block's tensors and the recomputed tensors
// they must rebuild first) hold at most max(kMaxRebuildChain, the block's
// tensors); it keeps the change only if the peak falls. A block is marked
// dependents first (and undone inputs first), so that each change refreshes
// only its own inputs: linear in the block.
//
// Cost: O((tensors + blocks) x kMaxRebuildChain x log ops) for a whole pass.
#ifndef SLACKSWAP_PLANNER_RECOMPUTE_PASS_H_
#define SLACKSWAP_PLANNER_RECOMPUTE_PASS_H_

#include <cstdint>
#include <string>

#include "planner/plan_draft.h"
#include "planner/planner_options.h"
#include "simulator/trace.h"

namespace slackswap {

// Longest rebuild chain the recompute pass forms one tensor at a time.
inline constexpr int32_t kMaxRebuildChain = 64;

class RecomputePass {
 public:
  // `trace`, `draft` and `stop` (may be null) must outlive the pass.
  RecomputePass(const Trace& trace, PlanDraft& draft, StopPoll* stop = nullptr);

  // Recomputes until the draft fits `budget_bytes` over the whole iteration
  // (true), or no candidate is left or `stop` said stop (false).
  bool Run(int64_t budget_bytes, PlannerStats& stats);

  // Recomputes the best candidate at `op` to remove up to `excess_bytes` there;
  // false if none. Used by repair when a replay waits for memory at `op`.
  bool RecomputeAt(int32_t op, int64_t excess_bytes, PlannerStats& stats);

 private:
  // The block rule for a kept tensor; once false, false for good.
  bool StaysInBlock(int32_t t) const;
  // The rebuild chain's length rule (walks the chain).
  bool ChainFits(int32_t t) const;
  bool BlockChainFits(int32_t block);
  int32_t BestTensor(int32_t op, int64_t excess_bytes, bool across_blocks);
  bool RecomputeBlock(int32_t op, PlannerStats& stats);
  static int32_t FindAlive(std::vector<int32_t>& next, int32_t i);
  int32_t FindAliveBlock(int32_t i);

  const Trace& trace_;
  PlanDraft& draft_;
  StopPoll* stop_;
  // Recomputable tensors by recompute cost per byte, ascending; entries that
  // can never be candidates again are skipped through alive_next_
  // (union-find with path compression).
  std::vector<int32_t> by_cost_per_byte_;
  std::vector<int32_t> alive_next_;
  // The same list for candidates across blocks (the block rule ignored).
  std::vector<int32_t> alive_across_next_;
  // Block index -> recomputable tensors its forward ops produce, in the
  // trace's recompute topological order (inputs before dependents).
  std::vector<std::vector<int32_t>> block_tensors_;
  // Blocks with recomputable bytes by recompute cost per byte of the whole
  // block, ascending; skipped as tensors are, through alive_block_next_.
  std::vector<int32_t> blocks_by_cost_;
  std::vector<int32_t> alive_block_next_;
  std::vector<int32_t> scratch_;
};

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_RECOMPUTE_PASS_H_
