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
// derivation is deterministic and O(ops + tensors + fixed transfers +
// relations).
//
// The copy streams carry items: an item below trace.num_tensors() is a
// swapped tensor, item num_tensors() + f is the trace's fixed transfer f
// (docs/event-model.md, "Fixed transfers"). Without fixed transfers every
// item is a tensor.
struct Schedule {
  // Per tensor: for swapped and recomputed tensors, the first backward
  // operator that reads it directly or through a rebuild (its deadline);
  // -1 for kept tensors. Then, per fixed transfer (index num_tensors() + f),
  // its before_op, or the number of operators when none waits for it.
  std::vector<int32_t> need_op;

  // The D2H stream's queue: items by the op after which they may start (a
  // tensor's producer, a transfer's after_op; -1 first), fixed transfers
  // before tensors at equal ops, then by index. Without fixed transfers:
  // swapped tensors in production order (producer op, then tensor id).
  std::vector<int32_t> offload_order;
  // The H2D stream's queue: items by need (earliest deadline first), fixed
  // transfers before tensors at equal needs, then by index.
  std::vector<int32_t> prefetch_order;
  // Per item: position in prefetch_order, or -1.
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

  // Per step: items freed when the step ends (their last reader, operator
  // or rebuild; a fixed H2D transfer's copy after its release_op). Swapped
  // tensors appear here for their prefetched copy.
  Csr release_after_step;
  // Per operator: swapped and recomputed tensors whose forward copy may be
  // dropped when the operator ends (their last forward use).
  Csr forward_release_after_op;
  // Per step: the number of completed H2D items the step needs before it
  // may start (1 + the highest rank among swapped tensors it reads after
  // their forward copy is gone and fixed transfers it waits for; 0 if none).
  std::vector<int32_t> prefetches_needed;

  // With fixed transfers only (empty otherwise). Per step: 1 + the highest
  // H2D rank among the fixed transfers the step waits for, and 1 + the
  // highest D2H position among them (0 if none).
  std::vector<int32_t> fixed_h2d_needed;
  std::vector<int32_t> fixed_d2h_needed;
  // Per operator: the fixed D2H transfers whose source it writes (their
  // GPU bytes are part of its allocation), as items.
  Csr fixed_sources;

  // DeriveSchedule's working memory (no meaning), kept with the schedule so
  // that deriving into the same Schedule again allocates nothing.
  struct Scratch {
    Csr prefetch_rows;
    std::vector<int32_t> swapped, rebuilt, dropped;
    std::vector<int32_t> rows;
    std::vector<int32_t> steps;
  } scratch;
};

// The op after which a D2H item may start (-1: from the start).
inline int32_t ReadyOp(const Trace& trace, int32_t item) {
  return item < trace.num_tensors()
             ? trace.tensors[item].producer_op
             : trace.fixed_transfers[item - trace.num_tensors()].after_op;
}

// The bytes an item moves over the link.
inline int64_t ItemBytes(const Trace& trace, int32_t item) {
  return item < trace.num_tensors()
             ? trace.tensors[item].size_bytes
             : trace.fixed_transfers[item - trace.num_tensors()].size_bytes;
}

// Derives the schedule. `plan` must be valid for `trace` (ValidatePlan).
Schedule DeriveSchedule(const Trace& trace, const Plan& plan);
// The same into `schedule`, whose previous contents are replaced: deriving
// into one Schedule again and again (a planner's candidates, one Schedule
// per thread) reuses its memory instead of allocating.
void DeriveSchedule(const Trace& trace, const Plan& plan, Schedule& schedule);
// The same where the caller has the plan's needs already: `need` must hold
// DeriveNeeds(trace, plan.decisions). It becomes the schedule's need_op (the
// vectors are swapped: `need` is left with other contents and memory).
void DeriveSchedule(const Trace& trace, const Plan& plan, Schedule& schedule,
                    std::vector<int32_t>& need);

// need_op only (the first part of DeriveSchedule), for planners that probe
// many candidate plans; the second form into `need`, reusing its memory.
std::vector<int32_t> DeriveNeeds(const Trace& trace,
                                 absl::Span<const Decision> decisions);
void DeriveNeeds(const Trace& trace, absl::Span<const Decision> decisions,
                 std::vector<int32_t>& need);

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_SCHEDULE_H_
