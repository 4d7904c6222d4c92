#include "planner/link_budget_pass.h"

#include <algorithm>
#include <limits>

#include "simulator/event_model.h"
#include "simulator/segment_tree.h"

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

namespace {

// The all-keep run's resident bytes at each op (with its workspace).
std::vector<int64_t> AllKeepProfile(const Trace& trace) {
  const int32_t num_ops = trace.num_ops();
  std::vector<int64_t> held(num_ops + 1, 0);
  for (const Tensor& t : trace.tensors) {
    held[t.producer_op] += t.size_bytes;
    held[t.last_backward_use + 1] -= t.size_bytes;
  }
  int64_t running = 0;
  for (int32_t o = 0; o < num_ops; ++o) {
    running += held[o];
    held[o] = running + trace.transient_bytes(o);
  }
  held.pop_back();
  return held;
}

// The tensors a swap can help, with their offload deadlines, their
// positions in the D2H queue (production order) and the H2D queue (deadline
// order; ties by tensor id), and the order the pass admits them in.
struct SwapCandidates {
  std::vector<int32_t> ranked;
  std::vector<int64_t> deadline;  // per tensor
  std::vector<int32_t> d2h_pos;   // per tensor
  std::vector<int32_t> h2d_pos;   // per tensor
  int count = 0;
};

// Where a swap helps: the all-keep run's highest point between a tensor's
// last forward use and its first backward use (the leftmost, if several).
// Its offload must end by that op's start (its deadline), and it helps only
// if that point passes the budget. For a transformer the point is the end
// of the forward pass; a trace whose peak comes earlier (or late in a long
// backward pass) gets earlier (or later) deadlines.
SwapCandidates FindCandidates(const Trace& trace, const IdealTimeline& timeline,
                              int64_t budget_bytes,
                              const PlannerOptions& options) {
  const MaxSegmentTree all_keep(AllKeepProfile(trace));
  SwapCandidates c;
  std::vector<int32_t> candidates;
  c.deadline.assign(trace.tensors.size(), 0);
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    const Tensor& tensor = trace.tensors[t];
    if (tensor.swap_forbidden || tensor.size_bytes <= 0) continue;
    const auto [highest, at_op] =
        all_keep.Max(tensor.last_forward_use + 1, tensor.first_backward_use);
    if (at_op < 0 || highest <= budget_bytes) continue;  // never helps
    // The guard absorbs what the ideal timeline ignores.
    const int64_t at = timeline.op_start_ns[at_op];
    c.deadline[t] = at - static_cast<int64_t>(options.guard_fraction *
                                              static_cast<double>(at));
    candidates.push_back(t);
  }
  c.count = static_cast<int>(candidates.size());
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
  c.d2h_pos.assign(trace.tensors.size(), 0);
  c.h2d_pos.assign(trace.tensors.size(), 0);
  for (int i = 0; i < c.count; ++i) {
    c.d2h_pos[by_production[i]] = i;
    c.h2d_pos[by_deadline[i]] = i;
  }
  // Ranking.
  if (options.ranking == SwapRanking::kProductionOrder) {
    c.ranked = by_production;
  } else {
    c.ranked = candidates;
    std::stable_sort(c.ranked.begin(), c.ranked.end(),
                     [&](int32_t a, int32_t b) {
                       return RecomputeCostPerByte(trace.tensors[a]) >
                              RecomputeCostPerByte(trace.tensors[b]);
                     });
  }
  return c;
}

}  // namespace

std::vector<int32_t> SelectSwaps(const Trace& trace, const Hardware& hardware,
                                 const IdealTimeline& timeline,
                                 int64_t budget_bytes,
                                 const PlannerOptions& options) {
  std::vector<int32_t> admitted;
  if (!options.link_budget_pass) return admitted;
  const SwapCandidates c =
      FindCandidates(trace, timeline, budget_bytes, options);
  const int n = c.count;
  const std::vector<int64_t>& deadline = c.deadline;
  const int64_t forward_ns = timeline.forward_end_ns;
  // D2H: a FIFO queue in production order. With P(m) the admitted durations
  // up to position m, offload m ends at max over k <= m of p_k + P(m) -
  // P(k - 1), which must not pass its deadline D_m: for every admitted
  // k <= m, A_k + B_m <= 0 with A_k = p_k - P(k - 1) and B_m = P(m) - D_m.
  // Admitting position i (duration d) lowers A by d after i and raises B by
  // d from i on, so pairs on one side of i keep their sums: the new pairs to
  // check are max over k <= i of A plus max over m >= i of B.
  MaxSegmentTree a_tree(n, kAbsent), b_tree(n, kAbsent);
  Fenwick d2h_sum(n), h2d_before(n);
  MaxSegmentTree h2d_tight(n, kAbsent);
  int64_t swapped = 0;
  const int64_t bytes_wanted =
      std::max<int64_t>(0, AllKeepPeakBytes(trace) - budget_bytes);
  const int64_t cap = hardware.host_pinned_memory_bytes > 0
                          ? hardware.host_pinned_memory_bytes
                          : std::numeric_limits<int64_t>::max();
  auto present = [](int64_t v) { return v > kAbsent / 2; };

  for (int32_t t : c.ranked) {
    if (swapped >= bytes_wanted) break;
    const Tensor& tensor = trace.tensors[t];
    if (swapped + tensor.size_bytes > cap) continue;
    const int64_t d2h_ns =
        TransferNs(tensor.size_bytes, hardware.d2h_bytes_per_second,
                   hardware.transfer_latency_ns);
    const int64_t h2d_ns =
        TransferNs(tensor.size_bytes, hardware.h2d_bytes_per_second,
                   hardware.transfer_latency_ns);
    const int i = c.d2h_pos[t];
    const int64_t before = d2h_sum.Prefix(i);
    const int64_t a_i = timeline.End(tensor.producer_op) - before;
    const int64_t b_i = before + d2h_ns - deadline[t];
    int64_t a_max = a_i;
    if (i > 0) {
      const auto [a, pos] = a_tree.Max(0, i);
      if (pos >= 0 && present(a)) a_max = std::max(a_max, a);
    }
    int64_t b_max = b_i;
    if (i + 1 < n) {
      const auto [b, pos] = b_tree.Max(i + 1, n);
      if (pos >= 0 && present(b)) b_max = std::max(b_max, b + d2h_ns);
    }
    if (a_max + b_max > 0) continue;
    // H2D: later prefetches (positions > j) each finish h2d_ns later.
    const int j = c.h2d_pos[t];
    const int64_t h2d_deadline =
        timeline.op_start_ns[tensor.first_backward_use];
    const int64_t release = std::max(forward_ns, deadline[t]);
    const int64_t own_h2d_slack =
        h2d_deadline - release - h2d_ns - h2d_before.Prefix(j);
    if (own_h2d_slack < 0) continue;
    const auto [later_tight, later_pos] = h2d_tight.Max(j + 1, n);
    if (later_pos >= 0 && present(later_tight) && -later_tight < h2d_ns)
      continue;

    a_tree.Add(i + 1, n, -d2h_ns);
    a_tree.Add(i, i + 1, a_i - a_tree.Get(i));
    b_tree.Add(i + 1, n, d2h_ns);
    b_tree.Add(i, i + 1, b_i - b_tree.Get(i));
    d2h_sum.Add(i, d2h_ns);
    h2d_tight.Add(j + 1, n, h2d_ns);
    h2d_tight.Add(j, j + 1, -own_h2d_slack - h2d_tight.Get(j));
    h2d_before.Add(j, h2d_ns);
    admitted.push_back(t);
    swapped += tensor.size_bytes;
  }
  return admitted;
}

}  // namespace slackswap
