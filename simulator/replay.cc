#include "simulator/replay.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "base/stop.h"

namespace slackswap {
namespace internal {
namespace {

// ceil(a / b) for a >= 0, b > 0 (up to INT64_MAX: a + b - 1 could
// overflow); in 64 bits when a allows (the common case: 128-bit division is a
// library call).
int64_t CeilDiv(absl::int128 a, int64_t b) {
  if (a < (absl::int128(1) << 62)) {
    const auto small = static_cast<int64_t>(a);
    return small / b + (small % b != 0 ? 1 : 0);
  }
  return static_cast<int64_t>(a / b + (a % b != 0 ? 1 : 0));
}

// floor(kWorkScale * num / den) for 0 <= num < den, bit by bit: num and den
// may reach 2^124 (products of two int64), where kWorkScale * num would not
// fit in 128 bits.
int64_t ScaledFraction(absl::int128 num, absl::int128 den) {
  int64_t q = 0;
  for (int64_t bit = kWorkScale; bit > 1; bit >>= 1) {
    num *= 2;  // < 2 * den
    q *= 2;
    if (num >= den) {
      num -= den;
      q += 1;
    }
  }
  return q;
}

}  // namespace

int64_t ContendedRate(int64_t flops, int64_t traffic, const Hardware& hardware,
                      int64_t copy_bytes_per_second) {
  if (traffic <= 0 || copy_bytes_per_second <= 0) return kWorkScale;
  using I = absl::int128;
  const I f = flops, m = traffic, p = hardware.matmul_flops_per_second,
          b = hardware.hbm_bytes_per_second, left = b - copy_bytes_per_second;
  // Compute-bound even with the HBM left: F / P >= M / (B - c).
  if (f * left >= m * p) return kWorkScale;
  // Contended time M / (B - c) against the uncontended max(F / P, M / B).
  // (Each ratio is below 1 here: F / P < M / (B - c), and c > 0.)
  const int64_t rate = f * b >= m * p ? ScaledFraction(f * left, p * m)
                                      : ScaledFraction(left, b);
  return std::max<int64_t>(rate, 1);
}

Replay::Replay(const Trace& trace, const Hardware& hardware, const Plan& plan,
               const Schedule& schedule, const SimulationOptions& options,
               Rates rates)
    : trace_(trace),
      hw_(hardware),
      plan_(plan),
      s_(schedule),
      options_(options),
      rates_(rates),
      projection_on_(options.prefetch_admission ==
                         PrefetchAdmission::kAnySpeed &&
                     !schedule.prefetch_order.empty()),
      fixed_(!trace.fixed_transfers.empty()),
      modelled_(options.physics.allocator != AllocatorKind::kNone),
      reserved_budget_(modelled_ && options.physics.budget_reserved),
      allocator_(options.physics.allocator,
                 reserved_budget_ ? options.budget_bytes
                                  : CachingAllocatorModel::kNoLimit) {
  // (Empty: computed when first needed.)
  prefetch_deadline_.clear();
  link_before_.clear();
  link_tail_.clear();
  offloaded_.assign(trace.tensors.size(), 0);
  forward_done_.assign(trace.tensors.size(), 0);
  if (options.per_layer_barriers) ComputeBarriers();
  if (modelled_) allocation_.assign(s_.prefetch_rank.size(), -1);
  result_.budget_bytes = options_.budget_bytes;
  result_.ideal_ns = trace_.ideal_ns;
  result_.events = 1;  // its start
  unstarted_ns_ = trace_.ideal_ns;
  // Bytes by decision, and the rebuilds' time (each tensor rebuilt once):
  // sums of selects, as a plan's decisions follow no pattern a branch
  // predictor could learn.
  int64_t bytes[3] = {0, 0, 0};
  int64_t rebuild_ns = 0;
  for (size_t t = 0; t < trace_.tensors.size(); ++t) {
    const Tensor& tensor = trace_.tensors[t];
    const Decision d = plan_.decisions[t];
    bytes[static_cast<int>(d)] += tensor.size_bytes;
    rebuild_ns += d == Decision::kRecompute ? tensor.recompute_ns : 0;
  }
  result_.kept_bytes = bytes[static_cast<int>(Decision::kKeep)];
  result_.swapped_bytes = bytes[static_cast<int>(Decision::kSwap)];
  result_.recomputed_bytes = bytes[static_cast<int>(Decision::kRecompute)];
  unstarted_ns_ += rebuild_ns;
  total_steps_ns_ = unstarted_ns_;
  k_ = s_.rebuilds.begin[0];
  const Hardware link =
      rates == Rates::kLockstep ? LockstepShare(hardware) : hardware;
  d2h_rate_ = link.d2h_bytes_per_second;
  h2d_rate_ = link.h2d_bytes_per_second;
  const TransferTimes* times = options.transfer_times;
  const size_t items = s_.prefetch_rank.size();
  if (times != nullptr && times->d2h_bytes_per_second == d2h_rate_ &&
      times->h2d_bytes_per_second == h2d_rate_ &&
      times->latency_ns == hardware.transfer_latency_ns &&
      times->d2h_ns.size() == items && times->h2d_ns.size() == items) {
    d2h_ns_ = times->d2h_ns.data();
    h2d_ns_ = times->h2d_ns.data();
  }
}

std::vector<std::unique_ptr<Replay::Buffers>>& Replay::Pool() {
  thread_local std::vector<std::unique_ptr<Buffers>> pool;
  return pool;
}

std::unique_ptr<Replay::Buffers> Replay::TakeBuffers() {
  std::vector<std::unique_ptr<Buffers>>& pool = Pool();
  if (pool.empty()) return std::make_unique<Buffers>();
  std::unique_ptr<Buffers> buffers = std::move(pool.back());
  pool.pop_back();
  return buffers;
}

Replay::~Replay() {
  // (Not those of a trace too large to be worth keeping.)
  std::vector<std::unique_ptr<Buffers>>& pool = Pool();
  if (pool.size() < kPooledBuffers &&
      buffers_->offloaded.capacity() <= kPooledItems &&
      buffers_->projection_values.capacity() <= kPooledItems) {
    pool.push_back(std::move(buffers_));
  }
}

ABSL_ATTRIBUTE_NOINLINE void Replay::EndLongWait(int64_t& wait_ns,
                                                 WaitCause cause) {
  wait_ns += now_ - stage_since_;
  RecordStall(cause);
  stage_since_ = now_;
}

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
    request(&allocation_[tensor], HeldBytes(tensor));
  } else {
    for (int32_t t : trace_.produces.Row(op_))
      request(&allocation_[t], trace_.tensors[t].size_bytes);
    if (fixed_) {
      for (int32_t item : s_.fixed_sources.Row(op_))
        request(&allocation_[item], HeldBytes(item));
    }
    request(&workspace_allocation_, trace_.ops[op_].workspace_bytes);
  }
  if (!allocator_.MallocAll(requests_, &granted_)) return false;
  for (size_t i = 0; i < slots_.size(); ++i) *slots_[i] = granted_[i];
  return true;
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
    EndWait(result_.barrier_wait_ns, WaitCause::kBarrier);
    stage_ = 1;
  }
  if (stage_ == 1) {
    if (fixed_ && (prefetches_done_ < s_.fixed_h2d_needed[step_] ||
                   offloads_done_ < s_.fixed_d2h_needed[step_])) {
      return;
    }
    EndWait(result_.fixed_transfer_wait_ns, WaitCause::kFixedTransfer);
    stage_ = 2;
  }
  if (stage_ == 2) {
    if (prefetches_done_ < s_.prefetches_needed[step_]) {
      if (held_.rank == static_cast<int32_t>(next_prefetch_) &&
          result_.held_prefetch_op < 0) {
        // The op a step belongs to: the first whose op step is not before it.
        int32_t lo = 0, hi = trace_.num_ops() - 1;
        while (lo < hi) {
          const int32_t mid = lo + (hi - lo) / 2;
          if (s_.OpStep(mid) >= held_.step) {
            hi = mid;
          } else {
            lo = mid + 1;
          }
        }
        result_.held_prefetch_op = lo;
        result_.held_prefetch_excess_bytes = held_.excess;
      }
      return;
    }
    EndWait(result_.prefetch_wait_ns, WaitCause::kPrefetch);
    stage_ = 3;
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
  EndWait(result_.memory_wait_ns, WaitCause::kMemory);
  const int64_t duration = rebuild ? trace_.tensors[tensor].recompute_ns
                                   : trace_.ops[op_].duration_ns;
  compute_busy_ = true;
  compute_start_ = now_;
  unstarted_ns_ -= duration;
  compute_earliest_end_ = now_ + duration;
  // (With variable rates the end moves as the rate changes.)
  compute_end_ = now_ + duration;
  compute_work_ = absl::int128(duration) * kWorkScale;
  compute_rate_ = kWorkScale;
  rated_copying_ = 0;  // the full rate is the rate without copies
  compute_since_ = now_;
  if (rates_ == Rates::kLockstep) {
    // Slowed by some copies only if slowed by both at once (the rate falls
    // as the copies' bytes per second rise).
    const Op& op = trace_.ops[op_];
    compute_slowable_ = options_.physics.hbm_contention && !rebuild &&
                        ContendedRate(op.flops, op.memory_traffic_bytes, hw_,
                                      d2h_rate_ + h2d_rate_) < kWorkScale;
  }
  Allocate(compute_alloc_);
  if (rebuild) {
    result_.recompute_ns += duration;
    compute_event_ = Record(TimelineKind::kRebuild, tensor, compute_end_);
  } else {
    compute_event_ = Record(TimelineKind::kOp, op_, compute_end_);
  }
}

void Replay::FinishCompute() {
  compute_busy_ = false;
  compute_end_ = kNever;
  if (physics() && !StepIsRebuild()) {
    const int64_t slowed = now_ - compute_start_ - trace_.ops[op_].duration_ns;
    result_.contention_ns += slowed;
    RecordEnd(compute_event_, slowed);
  } else {
    RecordEnd(compute_event_);
  }
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

void Replay::StartCopy(Copy& copy, int32_t item, int64_t link_bytes_per_second,
                       TimelineKind kind) {
  const int64_t size = ItemBytes(trace_, item);
  copy.busy = true;
  copy.tensor = item;
  copy.start = now_;
  copy.latency_end = now_ + hw_.transfer_latency_ns;
  if (rates_ == Rates::kShared) {
    // The latency first; then the bytes, at the rates SetRates gives.
    copy.moving = false;
    copy.work = absl::int128(size) * 1'000'000'000;
    copy.rate = 0;
    copy.since = now_;
    copy.end = copy.latency_end;
  } else {
    copy.end = now_ + CopyNs(item, &copy == &h2d_ ? h2d_ns_ : d2h_ns_,
                             link_bytes_per_second);
  }
  const int32_t num_tensors = trace_.num_tensors();
  copy.event = item < num_tensors ? Record(kind, item, copy.end)
                                  : Record(TimelineKind::kFixedTransfer,
                                           item - num_tensors, copy.end);
}

void Replay::EndCopy(Copy& copy, int64_t link_bytes_per_second) {
  int64_t slowed = 0;
  if (physics()) {
    const int64_t alone =
        TransferNs(ItemBytes(trace_, copy.tensor), link_bytes_per_second,
                   hw_.transfer_latency_ns);
    slowed = now_ - copy.start - alone;
    result_.uplink_wait_ns += slowed;
  }
  RecordEnd(copy.event, slowed);
  copy = Copy();
}

void Replay::TryStartD2H() {
  if (d2h_.busy || next_offload_ >= s_.offload_order.size()) return;
  const int32_t item = s_.offload_order[next_offload_];
  if (ops_done_ <= ReadyOp(trace_, item)) return;
  StartCopy(d2h_, item, d2h_rate_, TimelineKind::kOffload);
  if (rates_ != Rates::kShared) result_.d2h_busy_ns += d2h_.end - now_;
}

void Replay::FinishD2H() {
  const int32_t item = s_.offload_order[next_offload_++];
  if (rates_ == Rates::kShared) result_.d2h_busy_ns += now_ - d2h_.start;
  EndCopy(d2h_, hw_.d2h_bytes_per_second);
  ++offloads_done_;
  if (projection_built_) {
    // The projection may now count the forward copy's (or source's) free,
    // from HeldFromStep(item) on: when that is no later than the next step
    // to start, for every step it may still be asked about (a shift of
    // them all, which spares the tree an update).
    const int32_t from = HeldFromStep(item);
    if (from <= NextUnstartedStep()) {
      projected_shift_ -= HeldBytes(item);
    } else {
      projected_.Add(from - projection_base_, s_.num_steps - projection_base_,
                     -HeldBytes(item));
    }
  }
  if (item >= trace_.num_tensors()) {
    Release(item);  // a fixed transfer's source
    return;
  }
  offloaded_[item] = 1;
  last_offload_end_ = now_;
  if (forward_done_[item]) Release(item);
}

void Replay::TryStartH2D() {
  // Compute allocations are served first: no prefetch starts while the
  // compute stream waits for memory.
  if (h2d_.busy || next_prefetch_ >= s_.prefetch_order.size()) return;
  const int32_t t = s_.prefetch_order[next_prefetch_];
  if (t >= trace_.num_tensors()) {
    TryStartFixedH2D(t);
    return;
  }
  if (compute_waits_for_memory_) return;
  const int64_t size = trace_.tensors[t].size_bytes;
  if (!offloaded_[t]) return;
  h2d_touched_ = true;
  const bool issued = ops_done_ >= plan_.prefetch_issue_op[t];
  if (!issued && options_.issue_waited != nullptr) {
    (*options_.issue_waited)[t] = 1;
  }
  if (!issued && options_.issue_gated == nullptr) return;
  if (!reserved_budget_ && resident_ + size > options_.budget_bytes) return;
  if (!ProjectionAdmits(size)) return;
  if (!issued) {
    // (Under a reserved budget, whether the memory is there is not asked
    // before the issue point: the mark is then conservative.)
    (*options_.issue_gated)[t] = 1;
    return;
  }
  if (modelled_ && !AllocateModelled(t)) return;
  Allocate(size);
  if (projection_built_) {
    // Resident ahead of its deadline: the steps before it see it too.
    const int32_t from = NextUnstartedStep();
    const int32_t to = prefetch_deadline_[next_prefetch_];
    if (from < to) {
      projected_.Add(from - projection_base_, to - projection_base_, size);
    }
  }
  StartCopy(h2d_, t, h2d_rate_, TimelineKind::kPrefetch);
  if (rates_ != Rates::kShared) result_.h2d_busy_ns += h2d_.end - now_;
}

void Replay::TryStartFixedH2D(int32_t item) {
  const FixedTransfer& x = trace_.fixed_transfers[item - trace_.num_tensors()];
  if (ops_done_ <= x.after_op) return;
  const int64_t bytes = x.gpu_bytes;
  // (A transfer that holds no GPU memory cannot take any a step needs.)
  if (bytes > 0) {
    if (compute_waits_for_memory_) return;
    if (!reserved_budget_ && resident_ + bytes > options_.budget_bytes) return;
    if (!ProjectionAdmits(bytes)) return;
    if (modelled_ && !AllocateModelled(item)) return;
    Allocate(bytes);
    if (projection_built_) {
      const int32_t from = NextUnstartedStep();
      const int32_t to = prefetch_deadline_[next_prefetch_];
      if (from < to) {
        projected_.Add(from - projection_base_, to - projection_base_, bytes);
      }
    }
  }
  StartCopy(h2d_, item, h2d_rate_, TimelineKind::kPrefetch);
  if (rates_ != Rates::kShared) result_.h2d_busy_ns += h2d_.end - now_;
}

void Replay::FinishH2D() {
  ++next_prefetch_;
  if (rates_ == Rates::kShared) result_.h2d_busy_ns += now_ - h2d_.start;
  EndCopy(h2d_, hw_.h2d_bytes_per_second);
  ++prefetches_done_;
}

int64_t Replay::NextEvent() const {
  int64_t next =
      std::min({compute_busy_ ? compute_end_ : kNever, d2h_.end, h2d_.end});
  if (compute_busy_ && compute_slowable_) {
    // The op's rate changes where a copy starts moving.
    for (const Copy* copy : {&d2h_, &h2d_}) {
      if (copy->busy && copy->latency_end > now_)
        next = std::min(next, copy->latency_end);
    }
  }
  return next;
}

void Replay::AdvanceTo(int64_t t) {
  // The running op's work, where its rate can change.
  if (compute_busy_ && (rates_ == Rates::kShared || compute_slowable_)) {
    compute_work_ -= absl::int128(t - compute_since_) * compute_rate_;
    compute_since_ = t;
  }
  if (rates_ == Rates::kShared) {
    for (Copy* copy : {&d2h_, &h2d_}) {
      if (copy->busy && copy->moving) {
        copy->work -= absl::int128(t - copy->since) * copy->rate;
        copy->since = t;
      }
    }
  }
  now_ = t;
}

void Replay::FinishDue() {
  ++result_.events;
  if (compute_busy_ && compute_end_ == now_) FinishCompute();
  if (rates_ == Rates::kShared) {
    // A copy past its latency starts moving bytes (an empty one is done).
    for (Copy* copy : {&d2h_, &h2d_}) {
      if (copy->busy && !copy->moving && copy->latency_end == now_) {
        copy->moving = true;
        copy->since = now_;
        copy->end = copy->work > 0 ? kNever : now_;
      }
    }
  }
  if (d2h_.busy && d2h_.end == now_) FinishD2H();
  if (h2d_.busy && h2d_.end == now_) FinishH2D();
}

void Replay::SetRates(int64_t d2h_bytes_per_second,
                      int64_t h2d_bytes_per_second) {
  // An end changes only with its rate (the work drains at it meanwhile), or
  // is unknown (kNever) when a copy has just started moving.
  int64_t copying = 0;
  auto rate_copy = [&](Copy& copy, int64_t rate) {
    if (!copy.busy || !copy.moving) return;
    // (Saturating: only HBM contention reads the sum, and it bounds the
    // links far below INT64_MAX; without it the links may reach it.)
    copying = rate > std::numeric_limits<int64_t>::max() - copying
                  ? std::numeric_limits<int64_t>::max()
                  : copying + rate;
    if (copy.rate == rate && copy.end != kNever) return;
    copy.rate = rate;
    copy.end = copy.since + CeilDiv(copy.work, rate);
  };
  rate_copy(d2h_, d2h_bytes_per_second);
  rate_copy(h2d_, h2d_bytes_per_second);
  if (!compute_busy_ || !options_.physics.hbm_contention || StepIsRebuild())
    return;
  RateCompute(copying);
}

void Replay::RateLockstep() {
  if (!compute_busy_ || !compute_slowable_) return;
  int64_t copying = 0;
  if (d2h_.busy && d2h_.latency_end <= now_) copying += d2h_rate_;
  if (h2d_.busy && h2d_.latency_end <= now_) copying += h2d_rate_;
  RateCompute(copying);
}

void Replay::RateCompute(int64_t copying) {
  if (copying == rated_copying_) return;  // as it is
  rated_copying_ = copying;
  const Op& op = trace_.ops[op_];
  const int64_t rate =
      ContendedRate(op.flops, op.memory_traffic_bytes, hw_, copying);
  if (rate == compute_rate_) return;
  compute_rate_ = rate;
  compute_end_ = compute_since_ + CeilDiv(compute_work_, compute_rate_);
}

void Replay::ReportInfeasible() {
  result_.feasible = false;
  Infeasibility& why = result_.infeasibility;
  if (step_ == s_.num_steps) {
    // (Cannot happen: after the last step every transfer can start.)
    why.op = trace_.num_ops() - 1;
    why.waiting_for = WaitCause::kFixedTransfer;
    why.bytes_resident = resident_;
    why.reason = "a transfer could not start after the last step";
    return;
  }
  why.op = op_;
  why.rebuild_tensor = StepIsRebuild() ? s_.rebuilds.items[k_] : -1;
  why.bytes_resident = resident_;
  const std::string what =
      why.rebuild_tensor >= 0
          ? absl::StrCat("the rebuild of tensor ", why.rebuild_tensor,
                         " before op ", op_)
          : absl::StrCat("op ", op_);
  const int32_t num_tensors = trace_.num_tensors();
  // The head of the H2D queue, as the messages name it.
  auto head_name = [&](int32_t item) {
    return item < num_tensors
               ? absl::StrCat("tensor ", item)
               : absl::StrCat("fixed transfer ", item - num_tensors);
  };
  if (stage_ == 0) {
    why.waiting_for = WaitCause::kBarrier;
    why.reason = absl::StrCat(
        what, " waits at a per-layer barrier that no pending transfer ",
        "can release");
  } else if (stage_ == 1 || stage_ == 2) {
    why.waiting_for =
        stage_ == 1 ? WaitCause::kFixedTransfer : WaitCause::kPrefetch;
    if (next_prefetch_ < s_.prefetch_order.size()) {
      const int32_t head = s_.prefetch_order[next_prefetch_];
      why.bytes_needed = HeldBytes(head);
      why.reason = absl::StrCat(
          what,
          stage_ == 1 ? " waits for a fixed transfer" : " waits for a prefetch",
          "; the next one on the H2D stream (", head_name(head), ") needs ",
          why.bytes_needed, " bytes with ", Held());
    } else {
      why.reason =
          absl::StrCat(what, " waits for a fixed transfer with ", Held());
    }
  } else {
    why.waiting_for = WaitCause::kMemory;
    why.bytes_needed = compute_alloc_;
    why.reason = absl::StrCat(what, " needs ", compute_alloc_, " bytes with ",
                              Held(), ", and nothing pending can free memory");
  }
}

std::string Replay::Held() const {
  if (!reserved_budget_) {
    return absl::StrCat(resident_, " of ", options_.budget_bytes, " resident");
  }
  return absl::StrCat(allocator_.reserved_bytes(), " of ",
                      options_.budget_bytes, " reserved (", resident_,
                      " resident)");
}

void Replay::ReportStopped() {
  result_.feasible = false;
  result_.stopped = true;
  result_.infeasibility.reason =
      absl::StrCat("stopped at ", now_, " ns: the call was cancelled");
}

SimulationResult Replay::Run() {
  if (options_.cutoff_ns != SimulationOptions::kNoCutoff) BuildLinkBound();
  if (Resumable()) {
    recording_ = options_.record_resume_points;
    record_every_ = std::max(
        1, (trace_.num_forward_ops + kResumePoints - 1) / kResumePoints);
    next_record_ops_ = record_every_;
    if (recording_) result_.resume_points.reserve(kResumePoints);
    if (options_.resume_from != nullptr) Resume();
  }
  // (Polled first at once: a call stopped already ends each replay it
  // still starts there.)
  for (int events = kReplayStopPollEvents;; ++events) {
    if (recording_ && ops_done_ >= next_record_ops_) SaveState();
    TryStart();
    if (done()) break;
    if (events == kReplayStopPollEvents) {
      events = 0;
      if (StopRequested()) {
        ReportStopped();
        break;
      }
    }
    // Nothing runs faster than profiled: the compute stream still has the
    // running step's rest and every step not started.
    // Nor does the H2D stream (BuildLinkBound).
    const int64_t compute =
        std::max(now_, compute_busy_ ? compute_earliest_end_ : now_) +
        unstarted_ns_;
    if (recording_) NoteCheck(compute);
    const int64_t earliest = std::max(compute, LinkBound());
    if (earliest >= options_.cutoff_ns) {
      result_.feasible = false;
      result_.cut_off = true;
      result_.infeasibility.op = op_;
      result_.infeasibility.reason = absl::StrCat(
          "stopped at ", now_, " ns: the iteration takes at least ", earliest,
          " ns, not under the cutoff of ", options_.cutoff_ns);
      break;
    }
    // (As SetRates does with the rates of kShared.)
    if (rates_ == Rates::kLockstep) RateLockstep();
    const int64_t next = NextEvent();
    if (next == kNever) {
      ReportInfeasible();
      break;
    }
    AdvanceTo(next);
    FinishDue();
  }
  return Finish();
}

SimulationResult Replay::Finish() {
  if (result_.feasible && now_ > stage_since_) {
    // Fixed transfers that outlast the compute stream: the iteration waits.
    result_.fixed_transfer_wait_ns += now_ - stage_since_;
    RecordStall(WaitCause::kFixedTransfer);
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

}  // namespace internal
}  // namespace slackswap
