#include "planner/superneurons.h"

#include "planner/memory_driven.h"

namespace slackswap {

absl::StatusOr<PlanningResult> PlanSuperNeurons(
    const Trace& trace, const Hardware& hardware, int64_t budget_bytes,
    const Physics& physics, const StopFunction& should_stop) {
  return PlanMemoryDriven(
      trace, hardware, budget_bytes,
      [](const Trace& t, int32_t tensor) {
        const Op& producer = t.ops[t.tensors[tensor].producer_op];
        // A cheap op's output whose rebuild reruns more than that op (a
        // residual output whose matmul input is not saved) is not cheap to
        // rebuild: kept.
        const bool rebuilt_by_producer_alone =
            t.tensors[tensor].recompute_ns <= producer.duration_ns;
        switch (producer.kind) {
          case OpKind::kElementwise:
          case OpKind::kNormalization:
          case OpKind::kDropout:
          case OpKind::kPooling:
            return rebuilt_by_producer_alone ? Decision::kRecompute
                                             : Decision::kKeep;
          case OpKind::kMatmul:
          case OpKind::kAttention:
          case OpKind::kConv:
            return Decision::kSwap;
          default:
            return Decision::kKeep;
        }
      },
      physics, should_stop);
}

}  // namespace slackswap
