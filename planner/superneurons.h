// File: superneurons.h
//
// SuperNeurons (Wang et al., PPoPP'18) as the SlackSwap paper describes it:
// walking the saved tensors in production order until the memory budget is
// met, recompute the outputs of cheap ops (elementwise, normalization,
// dropout, pooling) and swap the outputs of expensive ops (matmul, attention,
// convolution); per-layer synchronization and prefetch one layer ahead, as in
// vDNN. Outputs of other ops (embedding, loss) are kept, and so are cheap ops'
// outputs whose rebuild reruns more than the op itself (a residual output
// whose matmul input is not saved): SuperNeurons recomputes cheap layers from
// the nearest kept tensor, and these are those tensors. Like vDNN it ignores
// the link-time budget.
#ifndef SLACKSWAP_PLANNER_SUPERNEURONS_H_
#define SLACKSWAP_PLANNER_SUPERNEURONS_H_

#include <cstdint>

#include "planner/slackswap.h"

namespace slackswap {

// Replayed with per-layer barriers. Deterministic; O(n log n).
absl::StatusOr<PlanningResult> PlanSuperNeurons(
    const Trace& trace, const Hardware& hardware, int64_t budget_bytes,
    const Physics& physics, const StopFunction& should_stop = nullptr);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_SUPERNEURONS_H_
