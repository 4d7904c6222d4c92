#include "planner/plan_draft.h"

#include <algorithm>
#include <limits>

namespace slackswap {

IdealTimeline::IdealTimeline(const Trace& trace)
    : op_start_ns(trace.ops.size() + 1, 0) {
  for (int32_t o = 0; o < trace.num_ops(); ++o) {
    op_start_ns[o + 1] = op_start_ns[o] + trace.ops[o].duration_ns;
  }
  forward_end_ns = op_start_ns[trace.num_forward_ops];
}

int32_t IdealTimeline::LastOpStartingBefore(int64_t time_ns) const {
  // op_start_ns is non-decreasing; the ops are 0..size-2.
  const auto end = op_start_ns.end() - 1;
  const auto it = std::lower_bound(op_start_ns.begin(), end, time_ns);
  return static_cast<int32_t>(it - op_start_ns.begin()) - 1;
}

namespace {

// Dependents a row may have before their needs go into the segment tree.
constexpr int kScannedDependents = 16;
constexpr int32_t kNoMin = std::numeric_limits<int32_t>::max();
constexpr int32_t kNoMax = std::numeric_limits<int32_t>::min();

std::vector<int64_t> Workspaces(const Trace& trace) {
  std::vector<int64_t> bytes(trace.ops.size());
  for (size_t o = 0; o < trace.ops.size(); ++o)
    bytes[o] = trace.transient_bytes(o);
  return bytes;
}

}  // namespace

PlanDraft::PlanDraft(const Trace& trace)
    : trace_(trace),
      plan_(Plan::AllKeep(trace)),
      need_(trace.tensors.size()),
      release_(trace.tensors.size()),
      forward_free_(trace.tensors.size(), 0),
      lifetime_(trace.tensors.size()),
      profile_(Workspaces(trace)),
      row_slots_(trace.tensors.size(), -1),
      published_(trace.tensors.size(), -1) {
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    const int32_t dependents =
        static_cast<int32_t>(trace.recompute_dependents.Row(t).size());
    if (dependents > kScannedDependents) {
      row_slots_[t] = num_slots_;
      num_slots_ += dependents;
    }
  }
  if (num_slots_ > 0) {
    slot_of_edge_.assign(trace.recompute_inputs.items.size(), -1);
    for (int32_t t = 0; t < trace.num_tensors(); ++t) {
      if (row_slots_[t] < 0) continue;
      const auto row = trace.recompute_dependents.Row(t);
      for (size_t j = 0; j < row.size(); ++j) {
        // The edge r -> t in r's (ascending) input row.
        const int32_t r = row[j];
        const auto inputs = trace.recompute_inputs.Row(r);
        const size_t k =
            std::lower_bound(inputs.begin(), inputs.end(), t) - inputs.begin();
        slot_of_edge_[trace.recompute_inputs.begin[r] + k] =
            row_slots_[t] + static_cast<int32_t>(j);
      }
    }
    slot_min_.assign(2 * static_cast<size_t>(num_slots_), kNoMin);
    slot_max_.assign(2 * static_cast<size_t>(num_slots_), kNoMax);
  }
  for (int32_t t = 0; t < trace.num_tensors(); ++t) Refresh(t);
  lifetime_updates_ = 0;
}

std::pair<int32_t, int32_t> PlanDraft::DependentNeeds(int32_t t) const {
  int32_t lo = kNoMin, hi = kNoMax;
  const auto row = trace_.recompute_dependents.Row(t);
  if (row_slots_[t] < 0) {
    for (int32_t r : row) {
      if (plan_.decisions[r] != Decision::kRecompute) continue;
      lo = std::min(lo, need_[r]);
      hi = std::max(hi, need_[r]);
    }
    return {lo, hi};
  }
  // [first, last) over the leaves of the iterative trees.
  size_t first = static_cast<size_t>(row_slots_[t]) + num_slots_;
  size_t last = first + row.size();
  for (; first < last; first >>= 1, last >>= 1) {
    if (first & 1) {
      lo = std::min(lo, slot_min_[first]);
      hi = std::max(hi, slot_max_[first++]);
    }
    if (last & 1) {
      lo = std::min(lo, slot_min_[--last]);
      hi = std::max(hi, slot_max_[last]);
    }
  }
  return {lo, hi};
}

void PlanDraft::Publish(int32_t t) {
  const int32_t value =
      plan_.decisions[t] == Decision::kRecompute ? need_[t] : -1;
  if (value == published_[t]) return;
  published_[t] = value;
  if (num_slots_ == 0) return;
  for (int32_t k = trace_.recompute_inputs.begin[t];
       k < trace_.recompute_inputs.begin[t + 1]; ++k) {
    const int32_t slot = slot_of_edge_[k];
    if (slot < 0) continue;
    size_t node = static_cast<size_t>(slot) + num_slots_;
    slot_min_[node] = value < 0 ? kNoMin : value;
    slot_max_[node] = value < 0 ? kNoMax : value;
    for (node >>= 1; node >= 1; node >>= 1) {
      slot_min_[node] = std::min(slot_min_[2 * node], slot_min_[2 * node + 1]);
      slot_max_[node] = std::max(slot_max_[2 * node], slot_max_[2 * node + 1]);
    }
  }
}

void PlanDraft::Apply(const Lifetime& l, int64_t bytes) {
  if (l.first_end >= l.first_begin)
    profile_.Add(l.first_begin, l.first_end + 1, bytes);
  if (l.second_end >= l.second_begin)
    profile_.Add(l.second_begin, l.second_end + 1, bytes);
}

bool PlanDraft::Refresh(int32_t t) {
  const Tensor& tensor = trace_.tensors[t];
  const auto [dependent_min, dependent_max] = DependentNeeds(t);
  const int32_t need = std::min(tensor.first_backward_use, dependent_min);
  const int32_t release = std::max(tensor.last_backward_use, dependent_max);
  const bool need_changed = need != need_[t];
  need_[t] = need;
  release_[t] = release;
  Lifetime l;
  switch (plan_.decisions[t]) {
    case Decision::kKeep:
      l.first_begin = tensor.producer_op;
      l.first_end = release;
      break;
    case Decision::kRecompute:
      l.first_begin = tensor.producer_op;
      l.first_end = tensor.last_forward_use;
      l.second_begin = need;
      l.second_end = release;
      break;
    case Decision::kSwap:
      l.first_begin = tensor.producer_op;
      l.first_end = std::max(tensor.last_forward_use, forward_free_[t]);
      l.second_begin = std::min(plan_.prefetch_issue_op[t], need);
      l.second_end = release;
      // A late offload and an early prefetch overlap: count the bytes once.
      if (l.second_begin <= l.first_end) {
        l.first_end = std::max(l.first_end, release);
        l.second_end = -1;
      }
      break;
  }
  if (!(l == lifetime_[t])) {
    Apply(lifetime_[t], -tensor.size_bytes);
    Apply(l, tensor.size_bytes);
    lifetime_[t] = l;
    ++lifetime_updates_;
  }
  Publish(t);
  return need_changed;
}

void PlanDraft::Set(int32_t t, Decision d, int32_t forward_free_op,
                    int32_t issue_op) {
  const bool was_recomputed = plan_.decisions[t] == Decision::kRecompute;
  plan_.decisions[t] = d;
  plan_.prefetch_issue_op[t] = d == Decision::kSwap ? issue_op : 0;
  forward_free_[t] = forward_free_op;
  // t's own lifetime, then its recompute inputs: their need or release may
  // move with t's (only a recomputed t reads them), and a moved need moves
  // their own inputs' in turn.
  const bool recomputed = d == Decision::kRecompute;
  const bool need_changed = Refresh(t);
  if (!was_recomputed && !recomputed) return;
  if (was_recomputed != recomputed || need_changed) {
    stack_.assign(trace_.recompute_inputs.Row(t).begin(),
                  trace_.recompute_inputs.Row(t).end());
  } else {
    return;
  }
  while (!stack_.empty()) {
    const int32_t u = stack_.back();
    stack_.pop_back();
    if (Refresh(u) && plan_.decisions[u] == Decision::kRecompute) {
      for (int32_t input : trace_.recompute_inputs.Row(u))
        stack_.push_back(input);
    }
  }
}

int32_t PlanDraft::RebuildChainSize(absl::Span<const int32_t> tensors,
                                    int32_t limit) const {
  if (visit_mark_.empty()) visit_mark_.assign(trace_.tensors.size(), 0);
  if (++visit_epoch_ == 0) {  // wrapped: forget every mark
    std::fill(visit_mark_.begin(), visit_mark_.end(), 0);
    visit_epoch_ = 1;
  }
  visit_stack_.clear();
  for (int32_t t : tensors) {
    if (visit_mark_[t] == visit_epoch_) continue;
    visit_mark_[t] = visit_epoch_;
    visit_stack_.push_back(t);
  }
  int32_t size = 0;
  while (!visit_stack_.empty() && size <= limit) {
    const int32_t u = visit_stack_.back();
    visit_stack_.pop_back();
    ++size;
    for (int32_t input : trace_.recompute_inputs.Row(u)) {
      if (visit_mark_[input] == visit_epoch_ ||
          plan_.decisions[input] != Decision::kRecompute) {
        continue;
      }
      visit_mark_[input] = visit_epoch_;
      visit_stack_.push_back(input);
    }
  }
  return size;
}

bool PlanDraft::ResidentAt(int32_t t, int32_t op) const {
  const Lifetime& l = lifetime_[t];
  return (l.first_begin <= op && op <= l.first_end) ||
         (l.second_begin <= op && op <= l.second_end);
}

}  // namespace slackswap
