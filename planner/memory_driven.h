// File: memory_driven.h
//
// What vDNN and SuperNeurons share: walk the saved tensors in production
// order, apply a policy-specific choice to each, and stop as soon as the plan
// fits the budget over the whole iteration (judged by a plan draft). Swaps are
// placed as a per-layer-barrier runtime runs them: the forward copy is freed
// at the end of its producer's block run, and the prefetch is issued one
// layer ahead.
#ifndef SLACKSWAP_PLANNER_MEMORY_DRIVEN_H_
#define SLACKSWAP_PLANNER_MEMORY_DRIVEN_H_

#include <cstdint>
#include <functional>

#include "planner/slackswap.h"

namespace slackswap {

// What to do with one tensor: keep (skip it), swap or recompute.
using TensorChoice = std::function<Decision(const Trace&, int32_t tensor)>;

// Replayed with per-layer barriers. CANCELLED (PlanningStopped) when
// `should_stop` said so.
absl::StatusOr<PlanningResult> PlanMemoryDriven(
    const Trace& trace, const Hardware& hardware, int64_t budget_bytes,
    const TensorChoice& choice, const Physics& physics,
    const StopFunction& should_stop = nullptr);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_MEMORY_DRIVEN_H_
