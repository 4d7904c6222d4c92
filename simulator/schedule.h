// File: schedule.h
//
// The schedule a valid plan implies: what a runtime executes and what the
// event model replays (the D2H and H2D orders, the rebuild points, when each
// copy is freed, what each step waits for).
//
// Example:
//   SLACKSWAP_RETURN_IF_ERROR(ValidatePlan(trace, hardware, plan, barriers));
//   Schedule schedule = DeriveSchedule(trace, plan);
#ifndef SLACKSWAP_SIMULATOR_SCHEDULE_H_
#define SLACKSWAP_SIMULATOR_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "simulator/plan.h"
#include "simulator/trace.h"

namespace slackswap {

// The schedule a plan implies. Every array is indexed as documented; the
// derivation is deterministic and O(ops + tensors + relations).
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

// Derives the schedule. `plan` must be valid for `trace` (ValidatePlan).
Schedule DeriveSchedule(const Trace& trace, const Plan& plan);

// need_op only (the first part of DeriveSchedule), for planners that probe
// many candidate plans.
std::vector<int32_t> DeriveNeeds(const Trace& trace,
                                 absl::Span<const Decision> decisions);

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_SCHEDULE_H_
