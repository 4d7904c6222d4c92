#include "planner/issue_points.h"

#include <algorithm>
#include <limits>

namespace slackswap {

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
  for (int32_t t : swaps) {
    const Tensor& tensor = trace.tensors[t];
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
  for (auto it = swaps.rbegin(); it != swaps.rend(); ++it) {
    const int32_t t = *it;
    const Tensor& tensor = trace.tensors[t];
    const int32_t need = draft.need(t);
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
    const int32_t earliest = tensor.last_forward_use + 1;
    const int32_t latest = barriers ? run_start[need] : need;
    const int32_t issue =
        issue_at_need[t]
            ? latest
            : std::clamp(by_time, earliest, std::max(earliest, latest));
    draft.SetSwap(t, forward_free[t], issue);
  }
}

}  // namespace slackswap
