#include "planner/checkpointing.h"

#include <algorithm>
#include <numeric>

#include "planner/blocks.h"
#include "planner/judge.h"
#include "planner/plan_draft.h"

namespace slackswap {

absl::StatusOr<PlanningResult> PlanCheckpointing(
    const Trace& trace, const Hardware& hardware, int64_t budget_bytes,
    const Physics& physics, const StopFunction& should_stop) {
  const LowerBound bound = ComputeLowerBound(trace, hardware, budget_bytes);
  if (!bound.feasible)
    return ProvenInfeasible(trace, hardware, budget_bytes, physics, bound);
  PlanDraft draft(trace);
  const std::vector<std::vector<int32_t>> bodies = BlockBodies(trace);
  std::vector<int64_t> body_bytes(bodies.size(), 0);
  for (size_t b = 0; b < bodies.size(); ++b) {
    for (int32_t t : bodies[b]) body_bytes[b] += trace.tensors[t].size_bytes;
  }
  std::vector<int32_t> order(bodies.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return body_bytes[a] > body_bytes[b];
  });
  StopPoll stop(should_stop);
  for (int32_t b : order) {
    if (draft.PeakBytes() <= budget_bytes || body_bytes[b] == 0) break;
    if (stop.StopNow()) return PlanningStopped();
    // Dependents first: no change walks the rebuild chain below it.
    for (auto it = bodies[b].rbegin(); it != bodies[b].rend(); ++it)
      draft.SetRecompute(*it);
  }
  if (stop.StopNow()) return PlanningStopped();
  PlanningResult result =
      Judge(trace, hardware, budget_bytes, draft.plan(), false, physics, bound);
  if (!result.feasible && draft.PeakBytes() > budget_bytes) {
    result.reason = "below the floor of block checkpointing: " + result.reason;
  }
  return result;
}

}  // namespace slackswap
