#include "simulator/plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/field_violations.h"
#include "simulator/schedule.h"

namespace slackswap {

Plan Plan::AllKeep(const Trace& trace) {
  Plan plan;
  plan.decisions.assign(trace.tensors.size(), Decision::kKeep);
  plan.prefetch_issue_op.assign(trace.tensors.size(), 0);
  return plan;
}

int64_t SwappedBytes(const Trace& trace, const Plan& plan) {
  int64_t swapped = 0;
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    if (plan.decisions[t] == Decision::kSwap)
      swapped += trace.tensors[t].size_bytes;
  }
  return swapped;
}

std::vector<int32_t> BlockRunStarts(const Trace& trace) {
  std::vector<int32_t> starts(trace.ops.size());
  for (int32_t o = 0; o < trace.num_ops(); ++o) {
    const bool continues =
        o > 0 && trace.ops[o].phase == trace.ops[o - 1].phase &&
        trace.ops[o].block_index == trace.ops[o - 1].block_index;
    starts[o] = continues ? starts[o - 1] : o;
  }
  return starts;
}

absl::Status ValidatePlan(const Trace& trace, const Hardware& hardware,
                          const Plan& plan, bool per_layer_barriers) {
  const size_t n = trace.tensors.size();
  if (plan.decisions.size() != n || plan.prefetch_issue_op.size() != n) {
    return InvalidField(
        "plan.tensors",
        absl::StrCat("has ", plan.decisions.size(), " entries; the trace has ",
                     n, " tensors"));
  }
  FieldViolations violations;
  int64_t swapped_bytes = 0;
  for (size_t t = 0; t < n && !violations.full(); ++t) {
    const Tensor& tensor = trace.tensors[t];
    const Decision d = plan.decisions[t];
    if (d == Decision::kSwap && tensor.swap_forbidden) {
      violations.Add(absl::StrCat("plan.tensors[", t, "].decision"),
                     "swap of a tensor whose swap is forbidden");
    } else if (d == Decision::kRecompute && tensor.recompute_forbidden) {
      violations.Add(absl::StrCat("plan.tensors[", t, "].decision"),
                     "recompute of a tensor whose recompute is forbidden");
    }
    if (d == Decision::kSwap) swapped_bytes += tensor.size_bytes;
  }
  if (!violations.empty()) return violations.ToStatus();
  if (hardware.host_pinned_memory_bytes > 0 &&
      swapped_bytes > hardware.host_pinned_memory_bytes) {
    return InvalidField(
        "plan.tensors",
        absl::StrCat("swaps ", swapped_bytes,
                     " bytes, above hardware.host_pinned_memory_bytes (",
                     hardware.host_pinned_memory_bytes, ")"));
  }
  const std::vector<int32_t> need = DeriveNeeds(trace, plan.decisions);
  std::vector<int32_t> run_starts;
  if (per_layer_barriers) run_starts = BlockRunStarts(trace);
  for (size_t t = 0; t < n && !violations.full(); ++t) {
    if (plan.decisions[t] != Decision::kSwap) continue;
    const int32_t issue = plan.prefetch_issue_op[t];
    const auto [earliest, latest] =
        IssueWindowOf(trace, t, need[t], per_layer_barriers, run_starts);
    if (issue < earliest || issue > latest) {
      violations.Add(
          absl::StrCat("plan.tensors[", t, "].prefetch_issue_op"),
          absl::StrCat(
              "must be in [", earliest, ", ", latest,
              "]: after the last forward use, and no later than op ", need[t],
              per_layer_barriers ? "'s block start, where a barrier awaits it"
                                 : ", which needs it"));
    }
  }
  return violations.ToStatus();
}

}  // namespace slackswap
