// File: event_model.h
//
// The event model: the physics every policy is judged by. It replays one
// iteration of a trace under a plan, a memory budget and a hardware link, with
// one compute stream, a FIFO device-to-host (D2H) copy stream and an
// earliest-deadline-first host-to-device (H2D) copy stream. Each rule, and the
// reason for it, is in docs/event-model.md.
//
// Example:
//   SimulationOptions options;
//   options.budget_bytes = AllKeepPeakBytes(trace) / 2;
//   absl::StatusOr<SimulationResult> result =
//       Simulate(trace, hardware, plan, options);
//
// Simulate is a pure function of its arguments: the same inputs give the same
// result, bit for bit. It is thread-compatible (no shared state). Cost is
// O((ops + tensors + relations) log tensors) time and linear memory.
#ifndef SLACKSWAP_SIMULATOR_EVENT_MODEL_H_
#define SLACKSWAP_SIMULATOR_EVENT_MODEL_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "simulator/caching_allocator.h"
#include "simulator/hardware.h"
#include "simulator/physics.h"
#include "simulator/plan.h"
#include "simulator/resume_points.h"
#include "simulator/schedule.h"
#include "simulator/trace.h"

namespace slackswap {

inline constexpr int64_t kUnlimitedBytes = std::numeric_limits<int64_t>::max();

// The rule that admits a prefetch (docs/event-model.md, "Prefetch
// admission").
enum class PrefetchAdmission : uint8_t {
  // The rule of the model: with the tensor resident, every compute step from
  // the next one up to the first that cannot start before this prefetch has
  // ended still fits, counting the allocations and frees the plan fixes in
  // step order and no free that waits on an offload not yet ended. A plan
  // that completes at one speed then completes within its budget at every
  // speed of every op, rebuild and link (the proof is in the document).
  kAnySpeed,
  // The rule before it (shared/SPEC.md section 3): the tensor fits now. A plan
  // that completes under it at the profiled speeds can deadlock at others;
  // kept to measure what the rule above costs and to show why it is needed.
  kFitsNow,
};

// Each item's copy time (TransferNs, the latency included) in each
// direction as a replay of one trace on one hardware with one physics
// takes it: at the link's rate, or at the lockstep share of the uplink
// (ComputeTransferTimes). Planners that replay many candidates of a trace
// compute it once (SimulationOptions::transfer_times).
struct TransferTimes {
  int64_t d2h_bytes_per_second = 0;
  int64_t h2d_bytes_per_second = 0;
  int64_t latency_ns = 0;
  // Per item: the tensors, then the fixed transfers.
  std::vector<int64_t> d2h_ns;
  std::vector<int64_t> h2d_ns;
};

struct SimulationOptions {
  // Bound on resident saved-tensor and workspace bytes.
  int64_t budget_bytes = kUnlimitedBytes;
  // vDNN-style barriers: after each forward block run, wait for its offloads;
  // before each backward block run, wait for its prefetches.
  bool per_layer_barriers = false;
  // Record every step, offload and prefetch in SimulationResult::timeline.
  bool record_timeline = false;
  // When set (one entry per tensor, zeroed by the caller): set to 1 for each
  // swapped tensor whose prefetch, at the head of the H2D queue, once waited
  // for its issue point alone (offloaded, the stream free, the memory there).
  // A prefetch never held back so would start at the same moment with any
  // earlier issue point: the exact search uses it to skip equivalent plans.
  std::vector<uint8_t>* issue_gated = nullptr;
  // When set (one entry per tensor, zeroed by the caller): set to 1 for each
  // swapped tensor whose prefetch, at the head of the H2D queue (offloaded,
  // the stream free, no step waiting for memory), was found before its
  // issue point at least once. The issue point gates nothing else, so a
  // plan that differs from this one only in an earlier issue point of an
  // unmarked tensor replays exactly as this one. Marking changes nothing in
  // the replay (issue_gated, by contrast, asks for the memory early); the
  // local search (polish.h) uses it to skip such plans.
  std::vector<uint8_t>* issue_waited = nullptr;
  // The node's physics and the allocator (physics.h). With an allocator,
  // it is replayed over the allocations and frees in the order the replay
  // makes them, for the peak reserved bytes (without one, the result's
  // reserved fields are 0); under a reserved budget, a step or prefetch
  // whose allocations the allocator cannot serve within budget_bytes (after
  // releasing its cached memory) waits, as for memory.
  Physics physics;
  // Planners comparing candidates: the replay stops as soon as the iteration
  // is certain to take at least this long: the time so far plus the profiled
  // durations of the steps not started (nothing runs faster than profiled),
  // or the H2D queue's transfers still to run, in order, each followed by
  // the profiled steps from the first that waits for it on.
  // The result is then infeasible with `cut_off` set. Lockstep and
  // single-GPU replays only (ranks with skew replay in full).
  int64_t cutoff_ns = kNoCutoff;
  static constexpr int64_t kNoCutoff = std::numeric_limits<int64_t>::max();
  PrefetchAdmission prefetch_admission = PrefetchAdmission::kAnySpeed;
  // Planners comparing candidates with a plan (resume_points.h): record
  // this replay's states in its forward pass (SimulationResult::
  // resume_points), and start from the latest of another replay's at which
  // this one is certain to be in the same state. The result is the same as
  // without them, but for resume_points and resumed_events.
  bool record_resume_points = false;
  const ResumeBase* resume_from = nullptr;
  // ComputeTransferTimes of this trace, hardware and physics, which the
  // replay then looks up instead of dividing. Used where its rates, latency
  // and item count are the replay's; the result is the same without it.
  const TransferTimes* transfer_times = nullptr;
};

// kFixedTransfer: a fixed transfer (trace.h) a step waits for, or the
// iteration's end waiting for fixed transfers that outlast the compute
// stream.
enum class WaitCause : uint8_t {
  kNone,
  kMemory,
  kPrefetch,
  kBarrier,
  kFixedTransfer
};

struct Infeasibility {
  int32_t op = -1;              // operator the blocked step belongs to
  int32_t rebuild_tensor = -1;  // tensor being rebuilt, or -1 for the op
  WaitCause waiting_for = WaitCause::kNone;
  int64_t bytes_needed = 0;
  int64_t bytes_resident = 0;
  std::string reason;
};

// kStall: the compute stream waited from start to end, for `cause`, before
// the step of operator `index` (the op, or a rebuild before it).
enum class TimelineKind : uint8_t {
  kOp,
  kRebuild,
  kOffload,
  kPrefetch,
  kStall,
  // A fixed transfer on its direction's stream; index: the transfer.
  kFixedTransfer
};

struct TimelineEvent {
  TimelineKind kind;
  // Operator for kOp and kStall (the number of operators for the wait at
  // the iteration's end), the fixed transfer for kFixedTransfer, tensor
  // otherwise.
  int32_t index;
  int64_t start_ns;
  int64_t end_ns;
  int64_t resident_bytes;  // just after the event started (a stall: ended)
  WaitCause cause = WaitCause::kNone;  // kStall only
  // Node physics: an op's time beyond its profiled duration (HBM
  // contention), a transfer's beyond its time alone on its link (the shared
  // uplink); 0 otherwise.
  int64_t slowed_ns = 0;
};

// How a replay's speeds differ from the profiled ones.
struct SpeedScaling {
  // Every operator's and rebuild's duration times this (>= 0): 1.2 is
  // kernels 20% slower.
  double kernel_time_factor = 1;
  // Every link's and uplink's bandwidth, both directions, times this (> 0):
  // 2 is a link twice as fast. Latencies are unchanged.
  double link_speed_factor = 1;
};

// One replay of a plan at a scaling (speed_scaling.h).
struct ScaledReplay {
  SpeedScaling scaling;
  // False when the scaled trace or machine leaves the ranges the event model
  // accepts (CheckTimeRange, CheckPhysics); the fields below are then 0.
  bool replayed = false;
  bool feasible = false;
  int64_t iteration_ns = 0;
  int64_t ideal_ns = 0;  // of the scaled trace
  double throughput_ratio = 0;
  int64_t peak_resident_bytes = 0;
};

struct SimulationResult {
  bool feasible = true;
  Infeasibility infeasibility;  // meaningful when !feasible
  // Stopped at SimulationOptions::cutoff_ns (then !feasible): not a verdict
  // on the plan, only that it cannot beat the cutoff; infeasibility.op is
  // the operator the compute stream had reached.
  bool cut_off = false;
  // Stopped because the thread's StopFunction said so (base/stop.h; then
  // !feasible): no verdict at all. Replays poll it every
  // kReplayStopPollEvents events.
  bool stopped = false;
  // The events the replay went through (its start, and each time its clock
  // stopped for what ends then; with ranks that do not run in lockstep,
  // every rank's; 0: not replayed):
  // its work, the same on every machine, whatever the threads. The searches
  // charge their budgets by it (planner/replay_cost.h).
  int64_t events = 0;
  // Of those, the ones a replay resumed from another's state did not run
  // (SimulationOptions::resume_from); 0 for a replay from the start.
  int64_t resumed_events = 0;

  int64_t iteration_ns = 0;
  int64_t ideal_ns = 0;
  double throughput_ratio = 0;  // ideal / iteration; 0 when infeasible

  int64_t prefetch_wait_ns = 0;
  int64_t memory_wait_ns = 0;
  int64_t barrier_wait_ns = 0;
  // Waiting on fixed transfers (before a step, and at the end).
  int64_t fixed_transfer_wait_ns = 0;
  int64_t recompute_ns = 0;

  int64_t swapped_bytes = 0;
  int64_t recomputed_bytes = 0;
  int64_t kept_bytes = 0;
  int64_t peak_resident_bytes = 0;
  int64_t budget_bytes = 0;
  // With an allocator model: its peak reserved bytes, and reserved minus its
  // allocated bytes at the fullest instant of that peak.
  int64_t peak_reserved_bytes = 0;
  int64_t fragmentation_bytes = 0;
  // Node physics: time ops ran beyond their profiled durations (HBM
  // contention), and time transfers took beyond what they take alone on
  // their GPU's link (the shared uplink); the rank reported (the slowest).
  int64_t contention_ns = 0;
  int64_t uplink_wait_ns = 0;
  int32_t rank = 0;

  int64_t d2h_busy_ns = 0;
  int64_t h2d_busy_ns = 0;
  int64_t forward_end_ns = 0;
  int64_t last_offload_lag_ns = 0;  // last offload end - forward end; 0 if none
  // PrefetchAdmission::kAnySpeed: the first prefetch the compute stream
  // waited for while the rule held it back for memory: the operator of the
  // step whose memory held it (the op itself, or the op a rebuild precedes)
  // and the bytes over the budget there with the prefetch resident. A
  // planner may free memory there. -1 and 0 when there was none.
  int32_t held_prefetch_op = -1;
  int64_t held_prefetch_excess_bytes = 0;

  std::vector<TimelineEvent> timeline;
  // How the plan fares at other speeds: its replays at RobustnessScalings()
  // (speed_scaling.h), when a caller asked (ReplayAtScalings); Simulate
  // leaves it empty.
  std::vector<ScaledReplay> scaled;
  // Where SimulationOptions::record_resume_points: this replay's states in
  // its forward pass, for replays of other plans to resume from.
  std::vector<ReplayState> resume_points;

  int64_t stall_ns() const {
    return prefetch_wait_ns + memory_wait_ns + barrier_wait_ns +
           fixed_transfer_wait_ns;
  }
};

// Rejects (INVALID_ARGUMENT naming the hardware field) a trace and hardware
// whose worst-case iteration time would not fit in int64 nanoseconds: every
// operator, rebuild and two transfers of every tensor, end to end, must stay
// below 2^62 ns. Simulate calls it; planners may call it once up front.
absl::Status CheckTimeRange(const Trace& trace, const Hardware& hardware);

// Rejects (INVALID_ARGUMENT naming the field) node physics (the hardware's
// uplink and switches, hardware.h) the model cannot
// replay: HBM contention without matmul and HBM rates, or with an HBM rate
// under twice the link's two directions; a skew outside [0, 2^40] ns; and,
// with any of them, times that could leave int64 when the uplink is shared
// by 64 transfers and every op runs at half speed. Simulate calls it.
// `steps`: iterations replayed back to back (a node's), all within 2^62 ns.
// Times out of range name what takes most of them: "trace.operators" (the
// ops and rebuilds), "physics.rank_skew_ns", or the slowest link or uplink.
absl::Status CheckPhysics(const Trace& trace, const Hardware& hardware,
                          const Physics& physics, int64_t steps = 1);

// Replays `plan`. The plan must satisfy ValidatePlan (this function checks it
// and returns its error otherwise). An infeasible plan is a result
// (feasible == false), not an error.
absl::StatusOr<SimulationResult> Simulate(const Trace& trace,
                                          const Hardware& hardware,
                                          const Plan& plan,
                                          const SimulationOptions& options);

// Same, with the schedule already derived (DeriveSchedule) and the plan
// already validated: the planners' inner loop. Undefined for invalid input.
SimulationResult SimulateSchedule(const Trace& trace, const Hardware& hardware,
                                  const Plan& plan, const Schedule& schedule,
                                  const SimulationOptions& options);

// Whether a swap's prefetch issued earlier in its window never makes a
// replay under these settings slower or stop completing: the any-speed
// admission rule, and no HBM contention, skewed ranks or allocator model.
// The admission rule lets a prefetch start only where every compute step up
// to its deadline still fits with it resident, so starting it sooner takes
// no memory a step needs; the H2D queue runs in need order, so a later head
// only holds back the prefetches behind it. Contention (a moving copy slows
// ops), skew (a rank's copies slow another's) and an allocator (an earlier
// allocation fragments the cache) break that argument, and so does the
// fits-now rule. Checked by tests/simulator/issue_point_properties_test.cc;
// the searches issue every prefetch at the earliest point of its window
// where it holds (IssuedAtEarliest, plan.h; docs/planner.md).
inline bool EarliestIssueIsBest(const Physics& physics,
                                PrefetchAdmission admission) {
  return admission == PrefetchAdmission::kAnySpeed && !physics.hbm_contention &&
         physics.rank_skew_ns == 0 && physics.allocator == AllocatorKind::kNone;
}

// The copy times a replay of `trace` on `hardware` with `physics` uses
// (TransferTimes).
TransferTimes ComputeTransferTimes(const Trace& trace, const Hardware& hardware,
                                   const Physics& physics);

// The most events (SimulationResult::events) a replay of `trace` can go
// through: its start, and each step (an operator, or a rebuild: a tensor is
// rebuilt once at most) and each copy (a swapped tensor's two, a fixed
// transfer's one) ending once and each copy's latency once, on each rank
// replayed (every GPU of the uplink where ranks start apart: rank_skew_ns,
// with node physics; else one).
int64_t MaxReplayEvents(const Trace& trace, const Hardware& hardware,
                        const Physics& physics);

// Peak resident bytes of the all-keep run with unlimited memory: the
// reference for budgets given as a fraction of peak. With fixed transfers,
// whose bytes' lifetimes depend on the speeds, the bytes every speed holds
// (Trace::transient_bytes): the smallest budget at which all-keep completes.
int64_t AllKeepPeakBytes(const Trace& trace);

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_EVENT_MODEL_H_
