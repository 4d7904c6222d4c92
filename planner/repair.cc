#include "planner/repair.h"

#include "planner/recompute_pass.h"

namespace slackswap {

// A swap that repair gives up: recomputed where allowed and its rebuild
// chain stays short (recompute_pass.h), otherwise kept.
void Unswap(const Trace& trace, int32_t t, PlanDraft& draft) {
  if (!trace.tensors[t].recompute_forbidden &&
      draft.RebuildChainSize(t, kMaxRebuildChain) <= kMaxRebuildChain) {
    draft.SetRecompute(t);
  } else {
    draft.SetKeep(t);
  }
}

// Asks every prefetch that arrived after its need op started to be issued
// earlier by more than it was late; a prefetch already issued as early as it
// can be becomes a recomputation (or a keep). Returns the number of changes.
int RepairLatePrefetches(const Trace& trace, const SimulationResult& replay,
                         std::vector<int64_t>& lead_ns, PlanDraft& draft) {
  std::vector<int64_t> prefetch_end(trace.tensors.size(), -1);
  std::vector<int64_t> op_start(trace.ops.size(), -1);
  for (const TimelineEvent& e : replay.timeline) {
    if (e.kind == TimelineKind::kPrefetch) prefetch_end[e.index] = e.end_ns;
    if (e.kind == TimelineKind::kOp) op_start[e.index] = e.start_ns;
  }
  int changes = 0;
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    if (draft.decision(t) != Decision::kSwap) continue;
    const int32_t need = draft.need(t);
    if (prefetch_end[t] < 0 || op_start[need] < 0 ||
        prefetch_end[t] < op_start[need])
      continue;
    const int32_t issue = draft.plan().prefetch_issue_op[t];
    if (issue > trace.tensors[t].last_forward_use + 1) {
      lead_ns[t] += (prefetch_end[t] - op_start[need]) + lead_ns[t] / 2 + 1;
    } else {
      Unswap(trace, t, draft);
    }
    ++changes;
  }
  return changes;
}

}  // namespace slackswap
