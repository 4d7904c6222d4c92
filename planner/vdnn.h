// File: vdnn.h
//
// vDNN (Rhu et al., MICRO'16) as the SlackSwap paper describes it: swap saved
// tensors in production order, layer by layer from the first, until the
// memory budget is met; prefetch one layer ahead; per-layer barriers (the
// compute stream waits for each layer's offloads at its end in the forward
// pass, and for its prefetches before it in the backward pass). It sizes its
// swaps by memory alone and ignores the link-time budget.
#ifndef SLACKSWAP_PLANNER_VDNN_H_
#define SLACKSWAP_PLANNER_VDNN_H_

#include <cstdint>

#include "planner/slackswap.h"

namespace slackswap {

// Replayed with per-layer barriers. Deterministic; O(n log n).
absl::StatusOr<PlanningResult> PlanVdnn(
    const Trace& trace, const Hardware& hardware, int64_t budget_bytes,
    const Physics& physics, const StopFunction& should_stop = nullptr);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_VDNN_H_
