#include "simulator/event_model.h"

#include <algorithm>

#include "absl/numeric/int128.h"
#include "absl/strings/str_cat.h"
#include "base/field_violations.h"
#include "base/status_macros.h"
#include "simulator/schedule.h"

namespace slackswap {
namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxSimulatedNs = int64_t{1} << 62;

// One replay. The three streams each run at most one thing at a time, so the
// next event is the earliest of at most three end times: no event queue.
class Replay {
 public:
  Replay(const Trace& trace, const Hardware& hardware, const Plan& plan,
         const Schedule& schedule, const SimulationOptions& options)
      : trace_(trace),
        hw_(hardware),
        plan_(plan),
        s_(schedule),
        options_(options),
        offloaded_(trace.tensors.size(), 0),
        forward_done_(trace.tensors.size(), 0),
        modelled_(options.allocator != AllocatorKind::kNone),
        reserved_budget_(modelled_ && options.budget_reserved),
        allocator_(options.allocator, reserved_budget_
                                          ? options.budget_bytes
                                          : CachingAllocatorModel::kNoLimit) {
    if (options.per_layer_barriers) ComputeBarriers();
    if (modelled_) allocation_.assign(trace.tensors.size(), -1);
  }

  SimulationResult Run();

 private:
  bool StepIsRebuild() const { return k_ < s_.rebuilds.begin[op_ + 1]; }
  void ComputeBarriers();
  void TryStartCompute();
  void TryStartD2H();
  void TryStartH2D();
  void FinishCompute();
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
  bool AllocateModelled(int32_t tensor);
  void Release(int32_t tensor) {
    resident_ -= trace_.tensors[tensor].size_bytes;
    if (modelled_ && allocation_[tensor] >= 0) {
      allocator_.Free(allocation_[tensor]);
      allocation_[tensor] = -1;
    }
  }
  void Record(TimelineKind kind, int32_t index, int64_t end) {
    if (options_.record_timeline) {
      result_.timeline.push_back({kind, index, now_, end, resident_});
    }
  }
  // The compute stream waited for `cause` from stage_since_ to now_.
  void RecordStall(WaitCause cause) {
    if (options_.record_timeline && now_ > stage_since_) {
      result_.timeline.push_back(
          {TimelineKind::kStall, op_, stage_since_, now_, resident_, cause});
    }
  }
  void ReportInfeasible();
  // "R of B resident", or under a reserved budget what the allocator holds.
  std::string Held() const {
    if (!reserved_budget_) {
      return absl::StrCat(resident_, " of ", options_.budget_bytes,
                          " resident");
    }
    return absl::StrCat(allocator_.reserved_bytes(), " of ",
                        options_.budget_bytes, " reserved (", resident_,
                        " resident)");
  }

  const Trace& trace_;
  const Hardware& hw_;
  const Plan& plan_;
  const Schedule& s_;
  const SimulationOptions& options_;
  SimulationResult result_;

  // Barrier requirements per step (empty without barriers).
  std::vector<int32_t> barrier_offloads_;
  std::vector<int32_t> barrier_prefetches_;

  int64_t now_ = 0;
  int64_t resident_ = 0;
  int32_t ops_done_ = 0;

  // Compute stream: the next step is rebuild k_ (if StepIsRebuild()) or op_.
  int32_t step_ = 0;
  int32_t op_ = 0;
  int32_t k_ = 0;
  bool compute_busy_ = false;
  int64_t compute_end_ = kNever;
  int64_t compute_alloc_ = 0;  // bytes the waiting step must allocate
  // 0: waiting for a barrier, 1: for inputs, 2: for memory.
  int stage_ = 0;
  int64_t stage_since_ = 0;
  bool compute_waits_for_memory_ = false;

  // D2H stream.
  size_t next_offload_ = 0;
  int32_t offloads_done_ = 0;
  bool d2h_busy_ = false;
  int64_t d2h_end_ = kNever;
  int64_t last_offload_end_ = -1;

  // H2D stream.
  size_t next_prefetch_ = 0;
  int32_t prefetches_done_ = 0;
  bool h2d_busy_ = false;
  int64_t h2d_end_ = kNever;

  std::vector<uint8_t> offloaded_;
  std::vector<uint8_t> forward_done_;

  // Allocator model (options_.allocator != kNone).
  const bool modelled_;
  const bool reserved_budget_;
  CachingAllocatorModel allocator_;
  std::vector<int32_t> allocation_;  // per tensor: its live copy's, or -1
  int32_t workspace_allocation_ = -1;
  std::vector<int64_t> requests_;
  std::vector<int32_t*> slots_;
  std::vector<int32_t> granted_;
};

bool Replay::AllocateModelled(int32_t tensor) {
  // A rebuild or prefetch allocates its tensor; an operator its outputs in
  // tensor order, then its workspace. Empty ones take nothing (PyTorch
  // returns no block for 0 bytes).
  requests_.clear();
  slots_.clear();
  granted_.clear();
  auto request = [&](int32_t* slot, int64_t bytes) {
    if (bytes == 0) return;
    requests_.push_back(bytes);
    slots_.push_back(slot);
  };
  if (tensor >= 0) {
    request(&allocation_[tensor], trace_.tensors[tensor].size_bytes);
  } else {
    for (int32_t t : trace_.produces.Row(op_))
      request(&allocation_[t], trace_.tensors[t].size_bytes);
    request(&workspace_allocation_, trace_.ops[op_].workspace_bytes);
  }
  if (!allocator_.MallocAll(requests_, &granted_)) return false;
  for (size_t i = 0; i < slots_.size(); ++i) *slots_[i] = granted_[i];
  return true;
}

void Replay::ComputeBarriers() {
  barrier_offloads_.assign(s_.num_steps, 0);
  barrier_prefetches_.assign(s_.num_steps, 0);
  const std::vector<int32_t> run_start = BlockRunStarts(trace_);
  // Forward: the step after a block run's last op waits for the offloads of
  // every tensor produced so far (the D2H stream is FIFO in production order).
  size_t offloads = 0;
  for (int32_t o = 0; o < trace_.num_forward_ops; ++o) {
    while (offloads < s_.offload_order.size() &&
           trace_.tensors[s_.offload_order[offloads]].producer_op <= o) {
      ++offloads;
    }
    const bool run_ends =
        o + 1 == trace_.num_ops() || run_start[o + 1] == o + 1;
    if (run_ends && o + 1 < trace_.num_ops()) {
      barrier_offloads_[s_.OpStep(o) + 1] = static_cast<int32_t>(offloads);
    }
  }
  // Backward: the first step of a block run (its first rebuild, if any) waits
  // for every prefetch needed up to the run's last op (a prefix of the
  // deadline-ordered H2D queue).
  size_t prefetches = 0;
  for (int32_t o = trace_.num_forward_ops; o < trace_.num_ops(); ++o) {
    if (run_start[o] != o) continue;
    int32_t last = o;
    while (last + 1 < trace_.num_ops() && run_start[last + 1] == o) ++last;
    while (prefetches < s_.prefetch_order.size() &&
           s_.need_op[s_.prefetch_order[prefetches]] <= last) {
      ++prefetches;
    }
    const int32_t first_step = o + s_.rebuilds.begin[o];
    barrier_prefetches_[first_step] = static_cast<int32_t>(prefetches);
  }
}

void Replay::TryStartCompute() {
  compute_waits_for_memory_ = false;
  if (compute_busy_ || step_ >= s_.num_steps) return;
  if (stage_ == 0) {
    if (options_.per_layer_barriers &&
        (offloads_done_ < barrier_offloads_[step_] ||
         prefetches_done_ < barrier_prefetches_[step_])) {
      return;
    }
    result_.barrier_wait_ns += now_ - stage_since_;
    RecordStall(WaitCause::kBarrier);
    stage_since_ = now_;
    stage_ = 1;
  }
  if (stage_ == 1) {
    if (prefetches_done_ < s_.prefetches_needed[step_]) return;
    result_.prefetch_wait_ns += now_ - stage_since_;
    RecordStall(WaitCause::kPrefetch);
    stage_since_ = now_;
    stage_ = 2;
  }
  const bool rebuild = StepIsRebuild();
  const int32_t tensor = rebuild ? s_.rebuilds.items[k_] : -1;
  compute_alloc_ = rebuild ? trace_.tensors[tensor].size_bytes
                           : trace_.op_allocation_bytes[op_];
  if ((!reserved_budget_ &&
       resident_ + compute_alloc_ > options_.budget_bytes) ||
      (modelled_ && !AllocateModelled(tensor))) {
    compute_waits_for_memory_ = true;
    return;
  }
  result_.memory_wait_ns += now_ - stage_since_;
  RecordStall(WaitCause::kMemory);
  const int64_t duration = rebuild ? trace_.tensors[tensor].recompute_ns
                                   : trace_.ops[op_].duration_ns;
  compute_busy_ = true;
  compute_end_ = now_ + duration;
  Allocate(compute_alloc_);
  if (rebuild) {
    result_.recompute_ns += duration;
    Record(TimelineKind::kRebuild, tensor, compute_end_);
  } else {
    Record(TimelineKind::kOp, op_, compute_end_);
  }
}

void Replay::FinishCompute() {
  compute_busy_ = false;
  compute_end_ = kNever;
  if (StepIsRebuild()) {
    ++k_;
  } else {
    const int32_t op = op_;
    ops_done_ = op + 1;
    resident_ -= trace_.ops[op].workspace_bytes;
    if (workspace_allocation_ >= 0) {
      allocator_.Free(workspace_allocation_);
      workspace_allocation_ = -1;
    }
    for (int32_t t : s_.forward_release_after_op.Row(op)) {
      if (plan_.decisions[t] == Decision::kRecompute || offloaded_[t]) {
        Release(t);
      } else {
        forward_done_[t] = 1;
      }
    }
    if (op + 1 == trace_.num_forward_ops) result_.forward_end_ns = now_;
    ++op_;
  }
  for (int32_t t : s_.release_after_step.Row(step_)) Release(t);
  ++step_;
  stage_ = 0;
  stage_since_ = now_;
}

void Replay::TryStartD2H() {
  if (d2h_busy_ || next_offload_ >= s_.offload_order.size()) return;
  const int32_t t = s_.offload_order[next_offload_];
  if (ops_done_ <= trace_.tensors[t].producer_op) return;
  const int64_t duration =
      TransferNs(trace_.tensors[t].size_bytes, hw_.d2h_bytes_per_second,
                 hw_.transfer_latency_ns);
  d2h_busy_ = true;
  d2h_end_ = now_ + duration;
  result_.d2h_busy_ns += duration;
  Record(TimelineKind::kOffload, t, d2h_end_);
}

void Replay::FinishD2H() {
  const int32_t t = s_.offload_order[next_offload_++];
  d2h_busy_ = false;
  d2h_end_ = kNever;
  ++offloads_done_;
  offloaded_[t] = 1;
  last_offload_end_ = now_;
  if (forward_done_[t]) Release(t);
}

void Replay::TryStartH2D() {
  // Compute allocations are served first: no prefetch starts while the
  // compute stream waits for memory.
  if (h2d_busy_ || compute_waits_for_memory_ ||
      next_prefetch_ >= s_.prefetch_order.size()) {
    return;
  }
  const int32_t t = s_.prefetch_order[next_prefetch_];
  const int64_t size = trace_.tensors[t].size_bytes;
  if (!offloaded_[t]) return;
  if (!reserved_budget_ && resident_ + size > options_.budget_bytes) return;
  if (ops_done_ < plan_.prefetch_issue_op[t]) {
    // (Under a reserved budget, whether the memory is there is not asked
    // before the issue point: the mark is then conservative.)
    if (options_.issue_gated != nullptr) (*options_.issue_gated)[t] = 1;
    return;
  }
  if (modelled_ && !AllocateModelled(t)) return;
  const int64_t duration =
      TransferNs(size, hw_.h2d_bytes_per_second, hw_.transfer_latency_ns);
  h2d_busy_ = true;
  h2d_end_ = now_ + duration;
  result_.h2d_busy_ns += duration;
  Allocate(size);
  Record(TimelineKind::kPrefetch, t, h2d_end_);
}

void Replay::FinishH2D() {
  ++next_prefetch_;
  h2d_busy_ = false;
  h2d_end_ = kNever;
  ++prefetches_done_;
}

void Replay::ReportInfeasible() {
  result_.feasible = false;
  Infeasibility& why = result_.infeasibility;
  why.op = op_;
  why.rebuild_tensor = StepIsRebuild() ? s_.rebuilds.items[k_] : -1;
  why.bytes_resident = resident_;
  const std::string what =
      why.rebuild_tensor >= 0
          ? absl::StrCat("the rebuild of tensor ", why.rebuild_tensor,
                         " before op ", op_)
          : absl::StrCat("op ", op_);
  if (stage_ == 0) {
    why.waiting_for = WaitCause::kBarrier;
    why.reason = absl::StrCat(
        what, " waits at a per-layer barrier that no pending transfer ",
        "can release");
  } else if (stage_ == 1) {
    why.waiting_for = WaitCause::kPrefetch;
    const int32_t head = s_.prefetch_order[next_prefetch_];
    why.bytes_needed = trace_.tensors[head].size_bytes;
    why.reason =
        absl::StrCat(what, " waits for a prefetch; the next one (tensor ", head,
                     ") needs ", why.bytes_needed, " bytes with ", Held());
  } else {
    why.waiting_for = WaitCause::kMemory;
    why.bytes_needed = compute_alloc_;
    why.reason = absl::StrCat(what, " needs ", compute_alloc_, " bytes with ",
                              Held(), ", and nothing pending can free memory");
  }
}

SimulationResult Replay::Run() {
  result_.budget_bytes = options_.budget_bytes;
  result_.ideal_ns = trace_.ideal_ns;
  for (size_t t = 0; t < trace_.tensors.size(); ++t) {
    const int64_t size = trace_.tensors[t].size_bytes;
    switch (plan_.decisions[t]) {
      case Decision::kKeep:
        result_.kept_bytes += size;
        break;
      case Decision::kSwap:
        result_.swapped_bytes += size;
        break;
      case Decision::kRecompute:
        result_.recomputed_bytes += size;
        break;
    }
  }
  k_ = s_.rebuilds.begin[0];
  while (true) {
    TryStartCompute();
    TryStartD2H();
    TryStartH2D();
    if (step_ == s_.num_steps) break;
    const int64_t next = std::min({compute_end_, d2h_end_, h2d_end_});
    if (next == kNever) {
      ReportInfeasible();
      break;
    }
    now_ = next;
    if (compute_end_ == now_) FinishCompute();
    if (d2h_end_ == now_) FinishD2H();
    if (h2d_end_ == now_) FinishH2D();
  }
  result_.iteration_ns = now_;
  if (result_.feasible && now_ > 0) {
    result_.throughput_ratio =
        static_cast<double>(trace_.ideal_ns) / static_cast<double>(now_);
  } else if (result_.feasible) {
    result_.throughput_ratio = 1.0;
  }
  if (last_offload_end_ >= 0) {
    result_.last_offload_lag_ns = last_offload_end_ - result_.forward_end_ns;
  }
  if (modelled_) {
    result_.peak_reserved_bytes = allocator_.peak_reserved_bytes();
    result_.fragmentation_bytes = allocator_.fragmentation_bytes();
  }
  return std::move(result_);
}

}  // namespace

absl::Status CheckTimeRange(const Trace& trace, const Hardware& hardware) {
  absl::int128 total = trace.ideal_ns;
  for (const Tensor& t : trace.tensors) total += t.recompute_ns;
  const int64_t slowest =
      std::min(hardware.d2h_bytes_per_second, hardware.h2d_bytes_per_second);
  const absl::int128 transfer_bytes =
      static_cast<absl::int128>(trace.total_tensor_bytes) * 2;
  total += transfer_bytes * 1'000'000'000 / slowest;
  total += static_cast<absl::int128>(hardware.transfer_latency_ns) * 2 *
           static_cast<absl::int128>(trace.tensors.size());
  if (total < kMaxSimulatedNs) return absl::OkStatus();
  const char* field =
      hardware.d2h_bytes_per_second <= hardware.h2d_bytes_per_second
          ? "hardware.d2h_bytes_per_second"
          : "hardware.h2d_bytes_per_second";
  return InvalidField(
      field, "too small for this trace: the iteration could exceed 2^62 ns");
}

absl::StatusOr<SimulationResult> Simulate(const Trace& trace,
                                          const Hardware& hardware,
                                          const Plan& plan,
                                          const SimulationOptions& options) {
  SLACKSWAP_RETURN_IF_ERROR(CheckTimeRange(trace, hardware));
  SLACKSWAP_RETURN_IF_ERROR(
      ValidatePlan(trace, hardware, plan, options.per_layer_barriers));
  const Schedule schedule = DeriveSchedule(trace, plan);
  return SimulateSchedule(trace, hardware, plan, schedule, options);
}

SimulationResult SimulateSchedule(const Trace& trace, const Hardware& hardware,
                                  const Plan& plan, const Schedule& schedule,
                                  const SimulationOptions& options) {
  return Replay(trace, hardware, plan, schedule, options).Run();
}

int64_t AllKeepPeakBytes(const Trace& trace) {
  // All keep, unlimited memory: the peak is the running sum of allocations
  // and releases in compute order; no transfers take part.
  int64_t resident = 0;
  int64_t peak = 0;
  std::vector<std::vector<int32_t>> release(trace.ops.size());
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    release[trace.tensors[t].last_backward_use].push_back(t);
  }
  for (int32_t o = 0; o < trace.num_ops(); ++o) {
    resident += trace.op_allocation_bytes[o];
    peak = std::max(peak, resident);
    resident -= trace.ops[o].workspace_bytes;
    for (int32_t t : release[o]) resident -= trace.tensors[t].size_bytes;
  }
  return peak;
}

}  // namespace slackswap
