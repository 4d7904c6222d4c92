#include "planner/issue_points.h"

#include <algorithm>
#include <limits>

namespace slackswap {

namespace {

// The trace's fixed transfers in `direction`, in their queue's order: D2H
// by after_op, H2D by before_op (none: last), then by index.
std::vector<int32_t> FixedInOrder(const Trace& trace, Direction direction) {
  std::vector<int32_t> out;
  for (int32_t f = 0; f < static_cast<int32_t>(trace.fixed_transfers.size());
       ++f) {
    if (trace.fixed_transfers[f].direction == direction) out.push_back(f);
  }
  auto key = [&](int32_t f) {
    const FixedTransfer& x = trace.fixed_transfers[f];
    if (direction == Direction::kD2H) return x.after_op;
    return x.before_op < 0 ? std::numeric_limits<int32_t>::max() : x.before_op;
  };
  std::stable_sort(out.begin(), out.end(),
                   [&](int32_t a, int32_t b) { return key(a) < key(b); });
  return out;
}

}  // namespace

void PlaceSwaps(const Trace& trace, const Hardware& hw,
                const IdealTimeline& timeline,
                const std::vector<int32_t>& run_start, bool barriers,
                const std::vector<int64_t>& lead_ns,
                const std::vector<uint8_t>& issue_at_need, PlanDraft& draft) {
  std::vector<int32_t> swaps;
  for (int32_t o = 0; o < trace.num_forward_ops; ++o) {
    for (int32_t t : trace.produces.Row(o)) {
      if (draft.decision(t) == Decision::kSwap) swaps.push_back(t);
    }
  }
  if (swaps.empty()) return;
  std::vector<int32_t> forward_free(trace.tensors.size(), 0);
  int64_t d2h_end = 0;
  // The D2H queue: the fixed transfers ready at or before a tensor's
  // producer go first (docs/event-model.md, "Fixed transfers").
  const std::vector<int32_t> fixed_d2h = FixedInOrder(trace, Direction::kD2H);
  size_t next_fixed = 0;
  for (int32_t t : swaps) {
    const Tensor& tensor = trace.tensors[t];
    for (; next_fixed < fixed_d2h.size(); ++next_fixed) {
      const FixedTransfer& x = trace.fixed_transfers[fixed_d2h[next_fixed]];
      if (x.after_op > tensor.producer_op) break;
      d2h_end =
          std::max(d2h_end, x.after_op < 0 ? 0 : timeline.End(x.after_op)) +
          TransferNs(x.size_bytes, hw.d2h_bytes_per_second,
                     hw.transfer_latency_ns);
    }
    d2h_end = std::max(d2h_end, timeline.End(tensor.producer_op)) +
              TransferNs(tensor.size_bytes, hw.d2h_bytes_per_second,
                         hw.transfer_latency_ns);
    forward_free[t] = timeline.LastOpStartingBefore(d2h_end);
  }
  // Op starts with rebuild time included: the rebuilds before op o delay it.
  std::vector<int64_t> rebuild_before(trace.ops.size() + 1, 0);
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    if (draft.decision(t) == Decision::kRecompute) {
      rebuild_before[draft.need(t)] += trace.tensors[t].recompute_ns;
    }
  }
  std::vector<int64_t> start(trace.ops.size());
  int64_t delay = 0;
  for (int32_t o = 0; o < trace.num_ops(); ++o) {
    delay += rebuild_before[o];
    start[o] = timeline.op_start_ns[o] + delay;
  }
  std::sort(swaps.begin(), swaps.end(), [&](int32_t a, int32_t b) {
    return draft.need(a) != draft.need(b) ? draft.need(a) < draft.need(b)
                                          : a < b;
  });
  int64_t next_start = std::numeric_limits<int64_t>::max();
  // The H2D queue, walked back from its end: the fixed transfers needed
  // after a prefetch's need hold the link then (those needed at it go
  // before it: fixed transfers first at ties).
  const std::vector<int32_t> fixed_h2d = FixedInOrder(trace, Direction::kH2D);
  auto next_fixed_h2d = fixed_h2d.rbegin();
  for (auto it = swaps.rbegin(); it != swaps.rend(); ++it) {
    const int32_t t = *it;
    const Tensor& tensor = trace.tensors[t];
    const int32_t need = draft.need(t);
    for (; next_fixed_h2d != fixed_h2d.rend(); ++next_fixed_h2d) {
      const FixedTransfer& x = trace.fixed_transfers[*next_fixed_h2d];
      if (x.before_op >= 0 && x.before_op <= need) break;
      const int64_t due =
          x.before_op < 0 ? std::numeric_limits<int64_t>::max()
                          : start[x.before_op] - rebuild_before[x.before_op];
      next_start = std::min(due, next_start) -
                   TransferNs(x.size_bytes, hw.h2d_bytes_per_second,
                              hw.transfer_latency_ns);
    }
    // The prefetch must end before the rebuilds ahead of its need begin.
    const int64_t deadline = start[need] - rebuild_before[need];
    const int64_t latest_start =
        std::min(deadline, next_start) - lead_ns[t] -
        TransferNs(tensor.size_bytes, hw.h2d_bytes_per_second,
                   hw.transfer_latency_ns);
    next_start = latest_start;
    // The last op that has started by latest_start.
    const int32_t by_time =
        static_cast<int32_t>(std::upper_bound(start.begin(),
                                              start.begin() + need + 1,
                                              latest_start) -
                             start.begin()) -
        1;
    const IssueWindow window =
        IssueWindowOf(trace, t, need, barriers, run_start);
    const int32_t issue =
        issue_at_need[t] ? window.latest : window.Clamp(by_time);
    draft.SetSwap(t, forward_free[t], issue);
  }
}

}  // namespace slackswap
