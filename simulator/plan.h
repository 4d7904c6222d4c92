// File: plan.h
//
// A plan: one decision per saved tensor, and a prefetch issue point for each
// swapped one; and its validation. The schedule derived from it is in
// schedule.h.
//
// Example:
//   Plan plan = ...;
//   SLACKSWAP_RETURN_IF_ERROR(ValidatePlan(trace, hardware, plan, barriers));
#ifndef SLACKSWAP_SIMULATOR_PLAN_H_
#define SLACKSWAP_SIMULATOR_PLAN_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "simulator/hardware.h"
#include "simulator/trace.h"

namespace slackswap {

enum class Decision : uint8_t { kKeep, kSwap, kRecompute };

struct Plan {
  // One per trace tensor.
  std::vector<Decision> decisions;
  // One per trace tensor; meaningful for kSwap only (see plan.proto).
  std::vector<int32_t> prefetch_issue_op;

  // All-keep plan for `trace`.
  static Plan AllKeep(const Trace& trace);
};

// The bytes `plan` swaps (its swapped tensors' sizes).
int64_t SwappedBytes(const Trace& trace, const Plan& plan);

// Checks `plan` against `trace` and `hardware`:
//   - one decision and issue point per tensor, each a known decision;
//   - no swap of a swap-forbidden tensor, no recompute of a
//     recompute-forbidden one;
//   - each swapped tensor's issue point in [last forward use + 1, need]; with
//     per-layer barriers at most the first operator of the need's block run;
//   - swapped bytes within hardware.host_pinned_memory_bytes (when set).
// Field paths start with "plan.". O(ops + tensors + relations).
absl::Status ValidatePlan(const Trace& trace, const Hardware& hardware,
                          const Plan& plan, bool per_layer_barriers);

// Per operator: the first operator of the maximal run of consecutive
// operators with the same phase and block index that contains it.
std::vector<int32_t> BlockRunStarts(const Trace& trace);

// The operators a swapped tensor's prefetch may be issued at (ValidatePlan):
// from the one after its last forward use to its need, or with per-layer
// barriers to the first operator of the need's block run (where a barrier
// awaits it).
struct IssueWindow {
  int32_t earliest = 0;
  int32_t latest = 0;
  // `op` moved into the window (to `earliest` where the window is empty).
  int32_t Clamp(int32_t op) const {
    return op < earliest ? earliest
           : op > latest ? std::max(earliest, latest)
                         : op;
  }
};
// Tensor t's window for its need `need` (DeriveNeeds); `run_starts` is
// BlockRunStarts(trace), read only with `barriers` (may be empty without).
inline IssueWindow IssueWindowOf(const Trace& trace, int32_t t, int32_t need,
                                 bool barriers,
                                 const std::vector<int32_t>& run_starts) {
  return {trace.tensors[t].last_forward_use + 1,
          barriers ? run_starts[need] : need};
}

// `plan` with every swap's prefetch issued at the earliest operator of its
// window (the one after its last forward use). Under the conditions of
// EarliestIssueIsBest (event_model.h) a replay of it is never slower than
// one of `plan` and completes wherever `plan` does (docs/planner.md, "Issue
// points at the earliest").
inline Plan IssuedAtEarliest(const Trace& trace, Plan plan) {
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    if (plan.decisions[t] == Decision::kSwap)
      plan.prefetch_issue_op[t] = trace.tensors[t].last_forward_use + 1;
  }
  return plan;
}

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_PLAN_H_
