#include "planner/memory_driven.h"

#include <algorithm>

#include "planner/blocks.h"
#include "planner/judge.h"
#include "planner/plan_draft.h"

namespace slackswap {

absl::StatusOr<PlanningResult> PlanMemoryDriven(
    const Trace& trace, const Hardware& hardware, int64_t budget_bytes,
    const TensorChoice& choice, const Physics& physics,
    const StopFunction& should_stop) {
  StopPoll stop(should_stop);
  const LowerBound bound = ComputeLowerBound(trace, hardware, budget_bytes);
  if (!bound.feasible)
    return ProvenInfeasible(trace, hardware, budget_bytes, physics, bound);
  PlanDraft draft(trace);
  const std::vector<int32_t> run_start = BlockRunStarts(trace);
  std::vector<int32_t> run_end(trace.ops.size());
  for (int32_t o = trace.num_ops() - 1; o >= 0; --o) {
    const bool last =
        o + 1 == trace.num_ops() || run_start[o + 1] != run_start[o];
    run_end[o] = last ? o : run_end[o + 1];
  }
  for (int32_t o = 0;
       o < trace.num_forward_ops && draft.PeakBytes() > budget_bytes; ++o) {
    for (int32_t t : trace.produces.Row(o)) {
      if (stop.Stop()) return PlanningStopped();
      if (draft.PeakBytes() <= budget_bytes) break;
      const Tensor& tensor = trace.tensors[t];
      if (tensor.size_bytes == 0) continue;
      const Decision d = choice(trace, t);
      if (d == Decision::kSwap && !tensor.swap_forbidden) {
        const int32_t need = draft.need(t);
        const int32_t issue =
            std::clamp(OneBlockAheadIssueOp(trace, run_start, need),
                       tensor.last_forward_use + 1, run_start[need]);
        draft.SetSwap(t, std::max(tensor.last_forward_use, run_end[o]), issue);
      } else if (d == Decision::kRecompute && !tensor.recompute_forbidden) {
        draft.SetRecompute(t);
      }
    }
  }
  // A recomputed dependent may have moved a swap's need earlier: place every
  // prefetch one layer ahead of its final need.
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    if (stop.Stop()) return PlanningStopped();
    if (draft.decision(t) != Decision::kSwap) continue;
    const int32_t need = draft.need(t);
    const int32_t issue =
        std::clamp(OneBlockAheadIssueOp(trace, run_start, need),
                   trace.tensors[t].last_forward_use + 1, run_start[need]);
    draft.SetSwap(t,
                  std::max(trace.tensors[t].last_forward_use,
                           run_end[trace.tensors[t].producer_op]),
                  issue);
  }
  return Judge(trace, hardware, budget_bytes, draft.plan(),
               /*per_layer_barriers=*/true, physics, bound);
}

}  // namespace slackswap
