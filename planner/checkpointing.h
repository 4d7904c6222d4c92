// File: checkpointing.h
//
// Block checkpointing (Chen et al.): keep only the inputs of the fewest blocks
// needed to fit, and rebuild those blocks' bodies in the backward pass. Blocks
// are added largest body first; the fit is judged over the whole iteration,
// so the headroom one block's rebuild needs in the backward pass is part of
// it. The host link stays idle.
#ifndef SLACKSWAP_PLANNER_CHECKPOINTING_H_
#define SLACKSWAP_PLANNER_CHECKPOINTING_H_

#include <cstdint>

#include "planner/slackswap.h"

namespace slackswap {

// Replayed without barriers. Deterministic; O(n log n).
absl::StatusOr<PlanningResult> PlanCheckpointing(
    const Trace& trace, const Hardware& hardware, int64_t budget_bytes,
    const Physics& physics, const StopFunction& should_stop = nullptr);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_CHECKPOINTING_H_
