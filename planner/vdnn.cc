#include "planner/vdnn.h"

#include "planner/memory_driven.h"

namespace slackswap {

absl::StatusOr<PlanningResult> PlanVdnn(const Trace& trace,
                                        const Hardware& hardware,
                                        int64_t budget_bytes,
                                        const Physics& physics,
                                        const StopFunction& should_stop) {
  return PlanMemoryDriven(
      trace, hardware, budget_bytes,
      [](const Trace&, int32_t) { return Decision::kSwap; }, physics,
      should_stop);
}

}  // namespace slackswap
