// File: plan.h
//
// A plan (one decision per saved tensor, and a prefetch issue point for each
// swapped one) and the schedule derived from it: what a runtime executes and
// what the event model replays.
//
// Example:
//   Plan plan = ...;
//   SLACKSWAP_RETURN_IF_ERROR(ValidatePlan(trace, hardware, plan, barriers));
//   Schedule schedule = DeriveSchedule(trace, plan);
#ifndef SLACKSWAP_SIMULATOR_PLAN_H_
#define SLACKSWAP_SIMULATOR_PLAN_H_

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

// The schedule a plan implies. Every array is indexed as documented; the
// derivation is deterministic and O((ops + tensors + relations) log).
struct Schedule {
  // Per tensor: for swapped and recomputed tensors, the first backward
  // operator that reads it directly or through a rebuild (its deadline);
  // -1 for kept tensors.
  std::vector<int32_t> need_op;

  // Swapped tensors in production order (producer op, then tensor id): the
  // order of the D2H stream.
  std::vector<int32_t> offload_order;
  // Swapped tensors by (need_op, tensor id): the order of the H2D stream.
  std::vector<int32_t> prefetch_order;
  // Per tensor: position in prefetch_order, or -1.
  std::vector<int32_t> prefetch_rank;

  // Rebuilds before operator o: rebuilds.Row(o), inputs before dependents.
  Csr rebuilds;

  // Compute-stream steps. The compute stream runs, for each operator o, the
  // rebuilds of rebuilds.Row(o) and then o. Step numbers are global:
  //   rebuild at position k of rebuilds.items (before op o): step o + k
  //   operator o:                                            step o +
  //   rebuilds.begin[o + 1]
  int32_t num_steps = 0;
  int32_t OpStep(int32_t op) const { return op + rebuilds.begin[op + 1]; }

  // Per step: tensors freed when the step ends (their last reader, operator
  // or rebuild). Swapped tensors appear here for their prefetched copy.
  Csr release_after_step;
  // Per operator: swapped and recomputed tensors whose forward copy may be
  // dropped when the operator ends (their last forward use).
  Csr forward_release_after_op;
  // Per step: the number of completed prefetches the step needs before it
  // may start (1 + the highest prefetch rank among swapped tensors it reads
  // after their forward copy is gone; 0 if none).
  std::vector<int32_t> prefetches_needed;
};

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

// Derives the schedule. `plan` must be valid for `trace` (ValidatePlan).
Schedule DeriveSchedule(const Trace& trace, const Plan& plan);

// need_op only (the first part of DeriveSchedule), for planners that probe
// many candidate plans.
std::vector<int32_t> DeriveNeeds(const Trace& trace,
                                 absl::Span<const Decision> decisions);

// Per operator: the first operator of the maximal run of consecutive
// operators with the same phase and block index that contains it.
std::vector<int32_t> BlockRunStarts(const Trace& trace);

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_PLAN_H_
