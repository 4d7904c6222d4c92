// The per-layer barriers and the any-speed admission rule's deadlines and
// projection of one GPU's replay (replay.h; docs/event-model.md,
// "Prefetch admission" and "When a compute step starts").
#include <algorithm>
#include <vector>

#include "simulator/replay.h"

namespace slackswap {
namespace internal {

void Replay::ComputeBarriers() {
  barrier_offloads_.assign(s_.num_steps, 0);
  barrier_prefetches_.assign(s_.num_steps, 0);
  const std::vector<int32_t> run_start = BlockRunStarts(trace_);
  // Forward: the step after a block run's last op waits for the offloads of
  // every tensor produced so far (the D2H stream is FIFO in production order).
  size_t offloads = 0;
  for (int32_t o = 0; o < trace_.num_forward_ops; ++o) {
    while (offloads < s_.offload_order.size() &&
           ReadyOp(trace_, s_.offload_order[offloads]) <= o) {
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
    // (Not past a fixed transfer that may start only inside the run: the
    // FIFO queue would hold the barrier forever. It and what follows it are
    // waited for at their need.)
    while (prefetches < s_.prefetch_order.size() &&
           s_.need_op[s_.prefetch_order[prefetches]] <= last) {
      const int32_t item = s_.prefetch_order[prefetches];
      if (item >= trace_.num_tensors() &&
          trace_.fixed_transfers[item - trace_.num_tensors()].after_op >= o) {
        break;
      }
      ++prefetches;
    }
    const int32_t first_step = o + s_.rebuilds.begin[o];
    barrier_prefetches_[first_step] = static_cast<int32_t>(prefetches);
  }
}

void Replay::ComputeDeadlines() {
  // A prefetch's deadline: the first step that requires it or one behind it
  // in the queue (a running maximum: the queue is served in order).
  const int32_t steps = s_.num_steps;
  prefetch_deadline_.assign(s_.prefetch_order.size(), steps);
  int32_t required = 0;
  for (int32_t j = FirstRequiringStep(); j < steps; ++j) {
    int32_t r = s_.prefetches_needed[j];
    if (!barrier_prefetches_.empty()) r = std::max(r, barrier_prefetches_[j]);
    for (; required < r; ++required) prefetch_deadline_[required] = j;
  }
}

void Replay::BuildLinkBound() {
  const size_t n = s_.prefetch_order.size();
  if (n == 0 || rates_ == Rates::kShared) return;
  if (prefetch_deadline_.empty()) ComputeDeadlines();
  link_before_.resize(n);
  link_tail_.resize(n);
  // The deadlines rise with the rank: one walk over the steps (op o's
  // rebuilds, then o) gives the profiled time of the steps before each
  // (kept in link_tail_ meanwhile) and of them all.
  int64_t before = 0;  // the steps before step j
  size_t r = 0;
  auto reach = [&](int32_t j) {
    for (; r < n && prefetch_deadline_[r] <= j; ++r) link_tail_[r] = before;
  };
  // (The forward operators' steps, where no prefetch is required and no
  // rebuild runs, summed alone.)
  const int32_t first = FirstRequiringStep();
  for (int32_t o = 0; o < first; ++o) before += trace_.ops[o].duration_ns;
  for (int32_t o = first; o < trace_.num_ops(); ++o) {
    for (int32_t k = s_.rebuilds.begin[o]; k < s_.rebuilds.begin[o + 1]; ++k) {
      reach(o + k);
      before += trace_.tensors[s_.rebuilds.items[k]].recompute_ns;
    }
    reach(s_.OpStep(o));
    before += trace_.ops[o].duration_ns;
  }
  reach(s_.num_steps);
  const int64_t total = before;
  int64_t h2d = 0;
  for (r = 0; r < n; ++r) {
    link_before_[r] = h2d;
    h2d += CopyNs(s_.prefetch_order[r], h2d_ns_, h2d_rate_);
    link_tail_[r] = h2d + total - link_tail_[r];
  }
  for (r = n - 1; r > 0; --r)
    link_tail_[r - 1] = std::max(link_tail_[r - 1], link_tail_[r]);
}

void Replay::BuildProjection() {
  // Each copy as the steps whose start finds it resident, in a difference
  // array (from its first such step to the step after its last); each
  // step's own allocation on top. Every copy's last step is its last
  // reader's (the release rows); forward copies that are not kept end at
  // their last forward use. Built when first asked, so that offloads ended
  // by then are not counted and no prefetch has started early.
  const int32_t steps = s_.num_steps;
  std::vector<int64_t>& values = buffers_->projection_values;
  values.assign(steps, 0);
  // (Index steps + 1 takes what lands on no step, so that the tensors' loop
  // below selects instead of branching on the plan's decisions.)
  const int32_t nowhere = steps + 1;
  std::vector<int64_t>& diff = buffers_->projection_diff;
  diff.assign(static_cast<size_t>(steps) + 2, 0);
  const auto size_of = [&](int32_t item) { return HeldBytes(item); };
  for (int32_t o = 0; o < trace_.num_ops(); ++o) {
    for (int32_t k = s_.rebuilds.begin[o]; k < s_.rebuilds.begin[o + 1]; ++k) {
      const int64_t size = size_of(s_.rebuilds.items[k]);
      values[o + k] = size;
      diff[o + k + 1] += size;  // the rebuilt copy
    }
    values[s_.OpStep(o)] = trace_.op_allocation_bytes[o];
  }
  for (int32_t j = 0; j < steps; ++j) {
    for (int32_t t : s_.release_after_step.Row(j)) diff[j + 1] -= size_of(t);
  }
  for (int32_t t = 0; t < trace_.num_tensors(); ++t) {
    const Tensor& tensor = trace_.tensors[t];
    const int64_t size = tensor.size_bytes;
    diff[s_.OpStep(tensor.producer_op) + 1] += size;
    // What is not kept leaves after its last forward use; a swapped tensor
    // (ranked: the others are -1) is back from its prefetch's deadline.
    const int32_t dropped = s_.OpStep(tensor.last_forward_use) + 1;
    diff[plan_.decisions[t] == Decision::kKeep ? nowhere : dropped] -= size;
    const int32_t rank = s_.prefetch_rank[t];
    const int32_t back = prefetch_deadline_[std::max(rank, 0)];
    diff[rank >= 0 ? back : nowhere] += size;
  }
  // A fixed H2D transfer's copy from its deadline (its release is a row).
  const int32_t num_tensors = trace_.num_tensors();
  for (int32_t f = 0; f < trace_.num_fixed_transfers(); ++f) {
    const int32_t item = num_tensors + f;
    if (trace_.fixed_transfers[f].direction == Direction::kH2D)
      diff[prefetch_deadline_[s_.prefetch_rank[item]]] += size_of(item);
  }
  // Forward copies (and fixed D2H sources) whose offload has not ended:
  // kept to the end (FinishD2H takes each off when its offload ends).
  for (size_t i = offloads_done_; i < s_.offload_order.size(); ++i) {
    const int32_t item = s_.offload_order[i];
    diff[HeldFromStep(item)] += size_of(item);
  }
  int64_t resident = 0;
  for (int32_t j = 0; j < steps; ++j) {
    resident += diff[j];
    values[j] += resident;
  }
  // Only steps from the next one on are ever asked about.
  projection_base_ = NextUnstartedStep();
  projected_.Assign(absl::MakeConstSpan(values).subspan(
      static_cast<size_t>(projection_base_)));
  projection_built_ = true;
}

bool Replay::ProjectionAdmits(int64_t bytes) {
  if (!projection_on_) return true;
  if (prefetch_deadline_.empty()) ComputeDeadlines();
  const int32_t from = NextUnstartedStep();
  const int32_t to = prefetch_deadline_[next_prefetch_];
  if (from >= to) return true;
  if (!projection_built_) BuildProjection();
  const auto [most, at] =
      projected_.Max(from - projection_base_, to - projection_base_);
  const int32_t step = at + projection_base_;
  const int64_t excess =
      most + projected_shift_ + bytes - options_.budget_bytes;
  if (excess <= 0) return true;
  held_ = {static_cast<int32_t>(next_prefetch_), step, excess};
  return false;
}

}  // namespace internal
}  // namespace slackswap
