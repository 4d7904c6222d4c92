// File: replay.h
//
// Internal to simulator/: one GPU's replay of one iteration under a plan
// (its compute stream, its D2H and H2D copy streams, its memory and the
// allocator model), stepped by a loop outside it so that several GPUs can
// share a host uplink (node_model.h). Simulate (event_model.h) is the way in
// for callers; docs/event-model.md states every rule.
//
// Times are local: 0 is this replay's start. Without node physics every
// step and transfer has a fixed duration, fixed when it starts. With node
// physics (a shared uplink, HBM contention) work progresses at rates that
// the loop sets after every event (SetRates), and end times follow from the
// remaining work: exact integers, as below. Ranks of one job in lockstep are
// the case between: every transfer moves at the same share of the uplink
// all along (so its end is known when it starts), and only an op that HBM
// contention can slow changes its rate, when a copy starts moving or ends.
#ifndef SLACKSWAP_SIMULATOR_REPLAY_H_
#define SLACKSWAP_SIMULATOR_REPLAY_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/numeric/int128.h"
#include "simulator/caching_allocator.h"
#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/plan.h"
#include "simulator/schedule.h"
#include "simulator/segment_tree.h"
#include "simulator/trace.h"

namespace slackswap {
namespace internal {

inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
// An op's remaining work is counted in 1/kWorkScale ns at its profiled
// speed; at full speed it progresses kWorkScale units per ns.
inline constexpr int64_t kWorkScale = int64_t{1} << 16;

// A replay (and a replay of many GPUs together) polls the thread's
// StopFunction (base/stop.h) as it starts and then once every this many
// events: a few hundred microseconds of replay between polls.
inline constexpr int kReplayStopPollEvents = 1024;

// The progress rate, in kWorkScale units per ns, of an op with `flops` and
// `traffic` bytes on `hardware` while copies move `copy_bytes_per_second`
// through HBM: the roofline time max(F / matmul, M / HBM) over
// max(F / matmul, M / (HBM - copies)), rounded down (at least 1). kWorkScale
// when the op has no traffic figure or nothing is copied. Requires
// copy_bytes_per_second < hardware.hbm_bytes_per_second.
int64_t ContendedRate(int64_t flops, int64_t traffic, const Hardware& hardware,
                      int64_t copy_bytes_per_second);

// How transfer and op rates are set.
enum class Rates : uint8_t {
  // Every GPU has its own link and no copy slows an op: fixed durations.
  kFixed,
  // hardware.gpus_per_uplink ranks run the same plan in lockstep: each copy
  // moves at LockstepShare(hardware)'s rate of its direction (its twins on
  // the other ranks move at the same instants), and with HBM contention an
  // op's rate follows this GPU's moving copies. Run() replays it alone.
  kLockstep,
  // Set by a loop that shares the uplink among replays (node_model.h):
  // SetRates must be called after every TryStart and FinishDue.
  kShared,
};

class Replay {
 public:
  Replay(const Trace& trace, const Hardware& hardware, const Plan& plan,
         const Schedule& schedule, const SimulationOptions& options,
         Rates rates);
  ~Replay();
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;

  // The whole iteration alone (rates kFixed or kLockstep).
  SimulationResult Run();

  // Stepping (the loop: TryStart, SetRates, NextEvent, AdvanceTo,
  // FinishDue, again), in local time.
  void TryStart() {
    TryStartCompute();
    TryStartD2H();
    TryStartH2D();
  }
  // Every step has run and every transfer has ended (fixed transfers may
  // outlast the compute stream), or the replay stopped infeasible.
  bool done() const {
    return (step_ == s_.num_steps && next_offload_ == s_.offload_order.size() &&
            next_prefetch_ == s_.prefetch_order.size()) ||
           !result_.feasible;
  }
  int64_t now() const { return now_; }
  // The earliest local time something running ends or changes phase;
  // kNever when nothing runs.
  int64_t NextEvent() const;
  // Moves the clock to `t` (>= now, <= NextEvent), progressing the work.
  void AdvanceTo(int64_t t);
  // Ends what ends at now.
  void FinishDue();
  // Nothing runs and steps remain: records why (the replay is then done).
  void ReportInfeasible();
  // Ends the replay unfinished: infeasible, with `stopped` set.
  void ReportStopped();
  // Whether each copy stream is moving bytes (past its latency) now (kShared).
  bool d2h_moving() const { return d2h_.busy && d2h_.moving; }
  bool h2d_moving() const { return h2d_.busy && h2d_.moving; }
  // Rates for the moving copies (bytes/s, > 0) and, with contention, the
  // compute stream's rate that follows from them; recomputes end times
  // (kShared).
  void SetRates(int64_t d2h_bytes_per_second, int64_t h2d_bytes_per_second);
  // The result; call once, when done.
  SimulationResult Finish();

 private:
  // Whether this replay may record and resume (resume_points.h): Run()
  // alone, without timeline, barriers, fixed transfers, an allocator
  // model or issue_gated marks.
  bool Resumable() const;
  // Starts from the latest of options_.resume_from's points that this
  // plan's replay is certain to reach in the same state, if any
  // (replay_resume.cc).
  void Resume();
  // The latest such point's index, or -1.
  int32_t ResumeIndex() const;
  void LoadState(const ReplayState& state);
  // Copies the state into `state` (save) or from it.
  void SyncState(ReplayState& state, bool save);
  // Saves the state at the top of Run()'s loop while it is one a plan that
  // differs later would share (in the forward pass, nothing on the H2D
  // stream yet); ends the recording otherwise.
  void SaveState();
  // Run()'s cutoff check: the compute stream's earliest end (`compute`)
  // and the iteration's (`earliest`), which the recording follows.
  void NoteCheck(int64_t compute) {
    checked_ = true;
    most_ahead_ns_ = std::max(most_ahead_ns_, compute - total_steps_ns_);
    last_check_ns_ = now_;
  }

  // A copy stream's transfer in flight.
  struct Copy {
    bool busy = false;
    int32_t tensor = -1;
    int64_t start = 0;
    int64_t end = kNever;
    size_t event = 0;  // its timeline entry
    // The latency runs to latency_end (then the bytes move). kShared: then
    // `work` (bytes times 1e9) drains at `rate` bytes/s from `since`.
    bool moving = false;
    int64_t latency_end = 0;
    absl::int128 work = 0;
    int64_t rate = 0;
    int64_t since = 0;
  };

  // Transfers and ops end as their rates vary (kLockstep, kShared): times
  // beyond the profiled ones are reported (uplink wait, contention).
  bool physics() const { return rates_ != Rates::kFixed; }
  bool StepIsRebuild() const { return k_ < s_.rebuilds.begin[op_ + 1]; }
  void ComputeBarriers();
  // PrefetchAdmission::kAnySpeed: each prefetch's deadline step, and the
  // projection of memory over the steps (see projected_), each made when
  // first needed.
  void ComputeDeadlines();
  void BuildProjection();
  // The first step that may require a prefetch: the first backward
  // operator's, before which no step is a rebuild, unless the trace's fixed
  // transfers (which a forward step may wait for) or a rebuild before it
  // say otherwise (0). Every step before it is its operator's.
  int32_t FirstRequiringStep() const {
    const int32_t first = trace_.num_forward_ops;
    return !fixed_ && s_.rebuilds.begin[first] == 0 ? first : 0;
  }
  // The cutoff's bound from the H2D stream (Run with a cutoff): the queue is
  // served in order at fixed durations, a prefetch's deadline step starts
  // after it ends, and no step runs faster than profiled. Per prefetch rank
  // r: the H2D time of the ranks before r (link_before_), and the most, over
  // the ranks r' >= r, of the H2D time up to r''s end plus the profiled
  // time of the steps from r''s deadline on (link_tail_).
  void BuildLinkBound();
  // The earliest the iteration can end by that bound (0 without it).
  int64_t LinkBound() const {
    if (next_prefetch_ >= link_tail_.size()) return 0;
    const int64_t from = h2d_.busy ? h2d_.start : now_;
    return from + link_tail_[next_prefetch_] - link_before_[next_prefetch_];
  }
  // Whether the any-speed rule admits the head prefetch of `bytes` now;
  // when not, notes where it is held (held_).
  bool ProjectionAdmits(int64_t bytes);
  // The next compute step not started.
  int32_t NextUnstartedStep() const {
    return compute_busy_ ? step_ + 1 : step_;
  }
  void TryStartCompute();
  void TryStartD2H();
  void TryStartH2D();
  // The fixed H2D transfer `item` at the head of the queue.
  void TryStartFixedH2D(int32_t item);
  // The GPU bytes an item holds: a tensor's size, a fixed transfer's
  // gpu_bytes.
  int64_t HeldBytes(int32_t item) const {
    const int32_t n = trace_.num_tensors();
    return item < n ? trace_.tensors[item].size_bytes
                    : trace_.fixed_transfers[item - n].gpu_bytes;
  }
  // For a D2H item: the first step whose start finds its memory resident
  // only because its offload has not ended (after a tensor's last forward
  // use, after a fixed transfer's after_op).
  int32_t HeldFromStep(int32_t item) const {
    const int32_t n = trace_.num_tensors();
    const int32_t op = item < n ? trace_.tensors[item].last_forward_use
                                : trace_.fixed_transfers[item - n].after_op;
    return op < 0 ? 0 : s_.OpStep(op) + 1;
  }
  void StartCopy(Copy& copy, int32_t tensor, int64_t link_bytes_per_second,
                 TimelineKind kind);
  // An item's copy time at d2h_rate_ or h2d_rate_ (TransferNs).
  int64_t CopyNs(int32_t item, const int64_t* table, int64_t rate) const {
    return table != nullptr ? table[item]
                            : TransferNs(ItemBytes(trace_, item), rate,
                                         hw_.transfer_latency_ns);
  }
  // Time a transfer took beyond what it takes alone on its own link.
  void EndCopy(Copy& copy, int64_t link_bytes_per_second);
  void FinishCompute();
  // kLockstep: the compute stream's rate for the copies moving now, when
  // contention can slow the running op.
  void RateLockstep();
  // The running op's rate while this GPU's copies move `copying` bytes/s
  // (with contention; not for a rebuild), and its end from its work left.
  void RateCompute(int64_t copying);
  void FinishD2H();
  void FinishH2D();
  void Allocate(int64_t bytes) {
    resident_ += bytes;
    result_.peak_resident_bytes =
        std::max(result_.peak_resident_bytes, resident_);
  }
  // The allocator's part of a step (tensor -1: operator op_'s outputs and
  // workspace) or of a rebuild or prefetch of `tensor`: false when it cannot
  // serve the requests within a reserved budget (then nothing is taken).
  // Called only with an allocator model.
  bool AllocateModelled(int32_t tensor);
  void Release(int32_t item) {
    resident_ -= HeldBytes(item);
    if (modelled_ && allocation_[item] >= 0) {
      allocator_.Free(allocation_[item]);
      allocation_[item] = -1;
    }
  }
  // Records an event starting now; returns its index (for its end).
  size_t Record(TimelineKind kind, int32_t index, int64_t end) {
    if (!options_.record_timeline) return 0;
    result_.timeline.push_back({kind, index, now_, end, resident_});
    return result_.timeline.size() - 1;
  }
  void RecordEnd(size_t event, int64_t slowed_ns = 0) {
    if (!options_.record_timeline) return;
    result_.timeline[event].end_ns = now_;
    result_.timeline[event].slowed_ns = slowed_ns;
  }
  // The compute stream waited for `cause` from stage_since_ to now_.
  void RecordStall(WaitCause cause) {
    if (options_.record_timeline && now_ > stage_since_) {
      result_.timeline.push_back(
          {TimelineKind::kStall, op_, stage_since_, now_, resident_, cause});
    }
  }
  // The compute stream's wait for `cause` since stage_since_ ends now: its
  // time is added to `wait_ns` and recorded, and the next wait starts now.
  // Nothing is written when it did not wait (the common case), and the
  // rest is out of line, where the timeline's loads cannot be hoisted into
  // this path (they read fields just stored, a store-forwarding stall).
  void EndWait(int64_t& wait_ns, WaitCause cause) {
    if (now_ != stage_since_) EndLongWait(wait_ns, cause);
  }
  void EndLongWait(int64_t& wait_ns, WaitCause cause);
  // "R of B resident", or under a reserved budget what the allocator holds.
  std::string Held() const;

  const Trace& trace_;
  const Hardware& hw_;
  const Plan& plan_;
  const Schedule& s_;
  const SimulationOptions& options_;
  const Rates rates_;
  // Each direction's rate with kFixed and kLockstep (the link, or its
  // lockstep share of the uplink).
  int64_t d2h_rate_ = 0;
  int64_t h2d_rate_ = 0;
  // Their copy times per item (options_.transfer_times), or null: then
  // worked out at each copy.
  const int64_t* d2h_ns_ = nullptr;
  const int64_t* h2d_ns_ = nullptr;
  SimulationResult result_;

  // The replay's per-item and per-step working memory, whose capacity the
  // replays on a thread pass on (TakeBuffers, and the destructor): a
  // planner's candidates would otherwise allocate it all again, each.
  struct Buffers {
    std::vector<uint8_t> offloaded;
    std::vector<uint8_t> forward_done;
    std::vector<int32_t> prefetch_deadline;
    std::vector<int64_t> link_before;
    std::vector<int64_t> link_tail;
    std::vector<int64_t> projection_values;
    std::vector<int64_t> projection_diff;
    MaxSegmentTree projected{0};
  };
  // The buffers of the replays that ended on this thread, for the next ones
  // (at most kPooledBuffers: a node's replays run at once, a few).
  static constexpr size_t kPooledBuffers = 8;
  // Buffers for more tensors or steps than this are not kept.
  static constexpr size_t kPooledItems = size_t{1} << 14;
  static std::vector<std::unique_ptr<Buffers>>& Pool();
  static std::unique_ptr<Buffers> TakeBuffers();
  std::unique_ptr<Buffers> buffers_ = TakeBuffers();

  // Barrier requirements per step (empty without barriers).
  std::vector<int32_t> barrier_offloads_;
  std::vector<int32_t> barrier_prefetches_;

  // PrefetchAdmission::kAnySpeed (with prefetches only). Per prefetch rank:
  // its deadline, the first step that cannot start before it has ended
  // (a step that reads it or a later one in the queue, or a barrier).
  // Per step j not started: the bytes resident when j starts plus j's own
  // allocation, projected from now: the plan's allocations and frees in step
  // order, every prefetch ahead of j's deadlines resident, forward copies
  // whose offload has not ended kept, and the prefetches started early
  // (before their deadline) resident up to it.
  const bool projection_on_;
  // The trace has fixed transfers (the schedule's fixed_* fields are set).
  const bool fixed_;
  std::vector<int32_t>& prefetch_deadline_ = buffers_->prefetch_deadline;
  std::vector<int64_t>& link_before_ = buffers_->link_before;
  std::vector<int64_t>& link_tail_ = buffers_->link_tail;
  bool projection_built_ = false;
  int32_t projection_base_ = 0;  // the step projected_ starts at
  MaxSegmentTree& projected_ = buffers_->projected;
  // Added to every step of projected_ from the next one to start on (the
  // only ones asked about from then on).
  int64_t projected_shift_ = 0;
  // The head prefetch the projection last held back: its queue position,
  // the step whose projection held it, and the bytes over the budget there.
  struct Held {
    int32_t rank = -1;
    int32_t step = -1;
    int64_t excess = 0;
  } held_;

  int64_t now_ = 0;
  int64_t resident_ = 0;
  // For the cutoff: the profiled durations of the steps not started yet,
  // and the earliest the running step can end (its start plus its own).
  int64_t unstarted_ns_ = 0;
  int64_t compute_earliest_end_ = 0;
  int32_t ops_done_ = 0;

  // Compute stream: the next step is rebuild k_ (if StepIsRebuild()) or op_.
  int32_t step_ = 0;
  int32_t op_ = 0;
  int32_t k_ = 0;
  bool compute_busy_ = false;
  int64_t compute_start_ = 0;
  int64_t compute_end_ = kNever;
  size_t compute_event_ = 0;
  int64_t compute_alloc_ = 0;  // bytes the waiting step must allocate
  // Variable rates: the running step's remaining work (kWorkScale units per
  // ns of profiled time), its rate, and since when (kShared; kLockstep while
  // compute_slowable_: the op is one that contention can slow).
  bool compute_slowable_ = false;
  absl::int128 compute_work_ = 0;
  int64_t compute_rate_ = kWorkScale;
  int64_t compute_since_ = 0;
  int64_t rated_copying_ = 0;  // the copy rate compute_rate_ is for
  // 0: waiting for a barrier, 1: for fixed transfers, 2: for inputs, 3: for
  // memory.
  int stage_ = 0;
  int64_t stage_since_ = 0;
  bool compute_waits_for_memory_ = false;

  // D2H stream.
  Copy d2h_;
  size_t next_offload_ = 0;
  int32_t offloads_done_ = 0;
  int64_t last_offload_end_ = -1;

  // H2D stream.
  Copy h2d_;
  size_t next_prefetch_ = 0;
  int32_t prefetches_done_ = 0;

  std::vector<uint8_t>& offloaded_ = buffers_->offloaded;
  std::vector<uint8_t>& forward_done_ = buffers_->forward_done;

  // Resume points (resume_points.h). The H2D stream has found its head
  // offloaded at least once (then no state is saved).
  bool h2d_touched_ = false;
  bool recording_ = false;
  int32_t record_every_ = 1;
  int32_t next_record_ops_ = 0;
  // The profiled time of every step (the ops' and the plan's rebuilds').
  int64_t total_steps_ns_ = 0;
  bool checked_ = false;
  int64_t most_ahead_ns_ = 0;
  int64_t last_check_ns_ = 0;

  // Allocator model (options_.physics.allocator != kNone).
  const bool modelled_;
  const bool reserved_budget_;
  CachingAllocatorModel allocator_;
  std::vector<int32_t> allocation_;  // per item: its live copy's, or -1
  int32_t workspace_allocation_ = -1;
  std::vector<int64_t> requests_;
  std::vector<int32_t*> slots_;
  std::vector<int32_t> granted_;
};

}  // namespace internal
}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_REPLAY_H_
