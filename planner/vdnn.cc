#include "planner/vdnn.h"

#include "planner/memory_driven.h"

namespace slackswap {

PlanningResult PlanVdnn(const Trace& trace, const Hardware& hardware,
                        int64_t budget_bytes) {
  return PlanMemoryDriven(
      trace, hardware, budget_bytes,
      [](const Trace&, int32_t) { return Decision::kSwap; });
}

}  // namespace slackswap
