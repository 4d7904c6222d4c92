// File: link_budget_pass.h
//
// SlackSwap's pass 1: spend the forward pass's link budget. Candidates are
// considered in decreasing recompute cost per byte (tensors that cannot be
// recomputed first), or in production order for the ablation. A swap is
// admitted only if
//   - the FIFO offloads (production order) of all admitted swaps still finish
//     by the guarded end of the forward pass, and
//   - the deadline-ordered prefetches, released at the end of the forward
//     pass, still arrive before each tensor's first backward use,
// and the pass stops once the admitted bytes cover `bytes_wanted` (the excess
// of the all-keep peak over the budget) or the host pinned-memory cap.
//
// Each admission test is incremental: O(log n) with two segment trees, so the
// pass is O(n log n) for n candidates. A FIFO queue with release times p_k and
// durations d_k finishes at max_k (p_k + sum_{j >= k} d_j); the D2H tree keeps
// each admitted offload's slack D - p_k - sum_{j >= k} d_j, and admitting an
// offload subtracts its duration from the slack of every earlier one. The H2D
// tree does the same for the prefetch deadlines in deadline order.
#ifndef SLACKSWAP_PLANNER_LINK_BUDGET_PASS_H_
#define SLACKSWAP_PLANNER_LINK_BUDGET_PASS_H_

#include <cstdint>
#include <vector>

#include "planner/plan_draft.h"
#include "planner/planner_options.h"
#include "simulator/hardware.h"
#include "simulator/trace.h"

namespace slackswap {

// The tensors to swap, in admission order. Polls the thread's stop
// (base/stop.h) before every kSelectStopPollCandidates candidates and, once
// it says stop, returns those admitted so far (the caller then stops).
inline constexpr int32_t kSelectStopPollCandidates = 1024;
std::vector<int32_t> SelectSwaps(const Trace& trace, const Hardware& hardware,
                                 const IdealTimeline& timeline,
                                 int64_t budget_bytes,
                                 const PlannerOptions& options);

// Recompute cost per byte used for ranking; +infinity for tensors that
// cannot be recomputed.
double RecomputeCostPerByte(const Tensor& tensor);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_LINK_BUDGET_PASS_H_
