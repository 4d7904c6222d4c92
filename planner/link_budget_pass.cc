#include "planner/link_budget_pass.h"

#include <algorithm>
#include <limits>

#include "planner/segment_tree.h"

namespace slackswap {
namespace {

constexpr int64_t kAbsent = MaxSegmentTree::kNegativeInfinity;

// Fenwick tree of int64 sums.
class Fenwick {
 public:
  explicit Fenwick(int n) : sum_(n + 1, 0) {}
  void Add(int i, int64_t v) {
    for (++i; i < static_cast<int>(sum_.size()); i += i & -i) sum_[i] += v;
  }
  // Sum over [0, i).
  int64_t Prefix(int i) const {
    int64_t s = 0;
    for (; i > 0; i -= i & -i) s += sum_[i];
    return s;
  }

 private:
  std::vector<int64_t> sum_;
};

}  // namespace

double RecomputeCostPerByte(const Tensor& tensor) {
  if (tensor.recompute_forbidden)
    return std::numeric_limits<double>::infinity();
  return static_cast<double>(tensor.recompute_ns) /
         static_cast<double>(std::max<int64_t>(tensor.size_bytes, 1));
}

std::vector<int32_t> SelectSwaps(const Trace& trace, const Hardware& hardware,
                                 const IdealTimeline& timeline,
                                 int64_t bytes_wanted,
                                 const PlannerOptions& options) {
  std::vector<int32_t> admitted;
  if (!options.link_budget_pass || bytes_wanted <= 0) return admitted;

  std::vector<int32_t> candidates;
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    if (!trace.tensors[t].swap_forbidden && trace.tensors[t].size_bytes > 0) {
      candidates.push_back(t);
    }
  }
  const int n = static_cast<int>(candidates.size());
  // Positions in the D2H queue (production order) and the H2D queue
  // (deadline order); ties by tensor id.
  auto by_production = candidates;
  std::sort(by_production.begin(), by_production.end(),
            [&](int32_t a, int32_t b) {
              const int32_t pa = trace.tensors[a].producer_op,
                            pb = trace.tensors[b].producer_op;
              return pa != pb ? pa < pb : a < b;
            });
  auto by_deadline = candidates;
  std::sort(by_deadline.begin(), by_deadline.end(), [&](int32_t a, int32_t b) {
    const int32_t na = trace.tensors[a].first_backward_use;
    const int32_t nb = trace.tensors[b].first_backward_use;
    return na != nb ? na < nb : a < b;
  });
  std::vector<int32_t> d2h_pos(trace.tensors.size()),
      h2d_pos(trace.tensors.size());
  for (int i = 0; i < n; ++i) {
    d2h_pos[by_production[i]] = i;
    h2d_pos[by_deadline[i]] = i;
  }

  // Ranking.
  std::vector<int32_t> order = candidates;
  if (options.ranking == SwapRanking::kProductionOrder) {
    order = by_production;
  } else {
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return RecomputeCostPerByte(trace.tensors[a]) >
             RecomputeCostPerByte(trace.tensors[b]);
    });
  }

  const int64_t forward_ns = timeline.forward_end_ns;
  const int64_t d2h_deadline =
      forward_ns - static_cast<int64_t>(options.guard_fraction *
                                        static_cast<double>(forward_ns));
  // Slack trees hold -slack so that the max is the tightest slack.
  MaxSegmentTree d2h_tight(n, kAbsent), h2d_tight(n, kAbsent);
  Fenwick d2h_after(n), h2d_before(n);
  int64_t swapped = 0;
  const int64_t cap = hardware.host_pinned_memory_bytes > 0
                          ? hardware.host_pinned_memory_bytes
                          : std::numeric_limits<int64_t>::max();

  for (int32_t t : order) {
    if (swapped >= bytes_wanted) break;
    const Tensor& tensor = trace.tensors[t];
    if (swapped + tensor.size_bytes > cap) continue;
    const int64_t d2h_ns =
        TransferNs(tensor.size_bytes, hardware.d2h_bytes_per_second,
                   hardware.transfer_latency_ns);
    const int64_t h2d_ns =
        TransferNs(tensor.size_bytes, hardware.h2d_bytes_per_second,
                   hardware.transfer_latency_ns);
    // D2H: earlier offloads (positions < i) each finish d2h_ns later.
    const int i = d2h_pos[t];
    const int64_t release = timeline.End(tensor.producer_op);
    const int64_t own_slack = d2h_deadline - release - d2h_ns -
                              (d2h_after.Prefix(n) - d2h_after.Prefix(i + 1));
    if (own_slack < 0) continue;
    const auto [earlier_tight, earlier_pos] = d2h_tight.Max(0, i);
    if (earlier_pos >= 0 && earlier_tight > kAbsent / 2 &&
        -earlier_tight < d2h_ns)
      continue;
    // H2D: later prefetches (positions > j) each finish h2d_ns later.
    const int j = h2d_pos[t];
    const int64_t deadline = timeline.op_start_ns[tensor.first_backward_use];
    const int64_t own_h2d_slack =
        deadline - forward_ns - h2d_ns - h2d_before.Prefix(j);
    if (own_h2d_slack < 0) continue;
    const auto [later_tight, later_pos] = h2d_tight.Max(j + 1, n);
    if (later_pos >= 0 && later_tight > kAbsent / 2 && -later_tight < h2d_ns)
      continue;

    d2h_tight.Add(0, i, d2h_ns);  // earlier slacks shrink: -slack grows
    d2h_tight.Add(i, i + 1, -own_slack - d2h_tight.Get(i));
    d2h_after.Add(i, d2h_ns);
    h2d_tight.Add(j + 1, n, h2d_ns);
    h2d_tight.Add(j, j + 1, -own_h2d_slack - h2d_tight.Get(j));
    h2d_before.Add(j, h2d_ns);
    admitted.push_back(t);
    swapped += tensor.size_bytes;
  }
  return admitted;
}

}  // namespace slackswap
