#include "planner/plan_draft.h"

#include <algorithm>

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

PlanDraft::PlanDraft(const Trace& trace)
    : trace_(trace),
      plan_(Plan::AllKeep(trace)),
      need_(trace.tensors.size()),
      release_(trace.tensors.size()),
      forward_free_(trace.tensors.size(), 0),
      lifetime_(trace.tensors.size()),
      profile_(trace.num_ops(), 0) {
  for (int32_t o = 0; o < trace.num_ops(); ++o) {
    profile_.Add(o, o + 1, trace.ops[o].workspace_bytes);
  }
  for (int32_t t = 0; t < trace.num_tensors(); ++t) Refresh(t);
}

void PlanDraft::Apply(const Lifetime& l, int64_t bytes) {
  if (l.first_end >= l.first_begin)
    profile_.Add(l.first_begin, l.first_end + 1, bytes);
  if (l.second_end >= l.second_begin)
    profile_.Add(l.second_begin, l.second_end + 1, bytes);
}

bool PlanDraft::Refresh(int32_t t) {
  const Tensor& tensor = trace_.tensors[t];
  int32_t need = tensor.first_backward_use;
  int32_t release = tensor.last_backward_use;
  for (int32_t r : trace_.recompute_dependents.Row(t)) {
    if (plan_.decisions[r] != Decision::kRecompute) continue;
    need = std::min(need, need_[r]);
    release = std::max(release, need_[r]);
  }
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
  Apply(lifetime_[t], -tensor.size_bytes);
  Apply(l, tensor.size_bytes);
  lifetime_[t] = l;
  return need_changed;
}

void PlanDraft::Set(int32_t t, Decision d, int32_t forward_free_op,
                    int32_t issue_op) {
  plan_.decisions[t] = d;
  plan_.prefetch_issue_op[t] = d == Decision::kSwap ? issue_op : 0;
  forward_free_[t] = forward_free_op;
  // t's own lifetime, then its recompute inputs: their need or release may
  // move with t's, and a moved need moves their own inputs' in turn.
  stack_.assign(1, t);
  bool first = true;
  while (!stack_.empty()) {
    const int32_t u = stack_.back();
    stack_.pop_back();
    const bool need_changed = Refresh(u);
    if (first || (need_changed && plan_.decisions[u] == Decision::kRecompute)) {
      for (int32_t input : trace_.recompute_inputs.Row(u))
        stack_.push_back(input);
    }
    first = false;
  }
}

bool PlanDraft::ResidentAt(int32_t t, int32_t op) const {
  const Lifetime& l = lifetime_[t];
  return (l.first_begin <= op && op <= l.first_end) ||
         (l.second_begin <= op && op <= l.second_end);
}

}  // namespace slackswap
