#include "planner/link_budget_pass.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "base/stop.h"
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

// A FIFO queue of copies at fixed positions, each released at a time (or
// with no release of its own) and due by a deadline (or never). With P(m)
// the admitted durations up to position m, copy m ends at max over
// released k <= m of p_k + P(m) - P(k - 1), which must not pass D_m: for
// every admitted pair k <= m, A_k + B_m <= 0 with A_k = p_k - P(k - 1) and
// B_m = P(m) - D_m. Admitting position i (duration d) lowers A by d after i
// and raises B by d from i on, so pairs on one side of i keep their sums:
// the new pairs to check are max over k <= i of A plus max over m >= i of B.
class CopyQueue {
 public:
  static constexpr int64_t kNone = kAbsent;

  explicit CopyQueue(int n) : n_(n), a_(n, kAbsent), b_(n, kAbsent), sum_(n) {}

  // The admitted durations before position i.
  int64_t Before(int i) const { return sum_.Prefix(i); }

  // Whether admitting a copy at i (duration d, release or kNone, deadline
  // or kNone) keeps every admitted deadline.
  bool Fits(int i, int64_t d, int64_t release, int64_t deadline) const {
    const int64_t before = Before(i);
    int64_t a_max = release == kNone ? kAbsent : release - before;
    if (i > 0) a_max = std::max(a_max, Present(a_.Max(0, i)));
    int64_t b_max = deadline == kNone ? kAbsent : before + d - deadline;
    if (i + 1 < n_) {
      const int64_t b = Present(b_.Max(i + 1, n_));
      if (b != kAbsent) b_max = std::max(b_max, b + d);
    }
    return a_max == kAbsent || b_max == kAbsent || a_max + b_max <= 0;
  }

  // When a copy admitted at i would end: max over released k <= i of A_k,
  // plus P(i) with it. kNone if no copy up to i has a release.
  int64_t End(int i, int64_t d, int64_t release) const {
    const int64_t before = Before(i);
    int64_t a_max = release == kNone ? kAbsent : release - before;
    if (i > 0) a_max = std::max(a_max, Present(a_.Max(0, i)));
    return a_max == kAbsent ? kNone : a_max + before + d;
  }

  void Admit(int i, int64_t d, int64_t release, int64_t deadline) {
    const int64_t before = Before(i);
    a_.Add(i + 1, n_, -d);
    if (release != kNone) a_.Add(i, i + 1, release - before - a_.Get(i));
    b_.Add(i + 1, n_, d);
    if (deadline != kNone) b_.Add(i, i + 1, before + d - deadline - b_.Get(i));
    sum_.Add(i, d);
  }

 private:
  static int64_t Present(std::pair<int64_t, int> max) {
    return max.second >= 0 && max.first > kAbsent / 2 ? max.first : kAbsent;
  }

  int n_;
  MaxSegmentTree a_, b_;
  Fenwick sum_;
};

// A fixed transfer at a position of one of the pass's queues.
struct FixedCopy {
  int pos = 0;
  int32_t index = 0;  // in trace.fixed_transfers
};

// The tensors a swap can help, with their offload deadlines, their
// positions in the D2H queue (production order) and the H2D queue (deadline
// order; ties by tensor id), and the order the pass admits them in. The
// queues also hold the trace's fixed transfers that share the link with
// the swaps (docs/event-model.md, "Fixed transfers"): every D2H one, in
// readiness order, and the H2D ones needed in the backward pass, by need;
// each before the tensors at the same op.
struct SwapCandidates {
  std::vector<int32_t> ranked;
  std::vector<int64_t> deadline;  // per tensor
  std::vector<int32_t> d2h_pos;   // per tensor
  std::vector<int32_t> h2d_pos;   // per tensor
  int count = 0;
  int d2h_size = 0;  // queue lengths: the candidates and fixed transfers
  int h2d_size = 0;
  std::vector<FixedCopy> d2h_fixed, h2d_fixed;  // in position order
};

// Orders `items` (a tensor t, or fixed transfer f as num_tensors + f) by
// `op_of` each, fixed transfers first at the same op, then by index; the
// positions go to `tensor_pos` and, for fixed transfers, `fixed`. Returns
// the queue's length.
template <typename OpOf>
int PlaceInQueue(const Trace& trace, std::vector<int32_t> items, OpOf op_of,
                 std::vector<int32_t>& tensor_pos,
                 std::vector<FixedCopy>& fixed) {
  const int32_t num_tensors = trace.num_tensors();
  std::sort(items.begin(), items.end(), [&](int32_t a, int32_t b) {
    const int32_t oa = op_of(a), ob = op_of(b);
    if (oa != ob) return oa < ob;
    if ((a >= num_tensors) != (b >= num_tensors)) return a >= num_tensors;
    return a < b;
  });
  for (int i = 0; i < static_cast<int>(items.size()); ++i) {
    if (items[i] < num_tensors) {
      tensor_pos[items[i]] = i;
    } else {
      fixed.push_back({i, items[i] - num_tensors});
    }
  }
  return static_cast<int>(items.size());
}

// Places the candidates and the fixed transfers in both queues.
void PlaceQueues(const Trace& trace, const std::vector<int32_t>& candidates,
                 SwapCandidates& c) {
  const int32_t num_tensors = trace.num_tensors();
  std::vector<int32_t> d2h_items = candidates, h2d_items = candidates;
  for (int32_t f = 0; f < static_cast<int32_t>(trace.fixed_transfers.size());
       ++f) {
    const FixedTransfer& x = trace.fixed_transfers[f];
    if (x.direction == Direction::kD2H) {
      d2h_items.push_back(num_tensors + f);
    } else if (x.before_op >= trace.first_backward_op()) {
      h2d_items.push_back(num_tensors + f);
    }
  }
  auto fixed = [&](int32_t item) -> const FixedTransfer& {
    return trace.fixed_transfers[item - num_tensors];
  };
  c.d2h_pos.assign(trace.tensors.size(), 0);
  c.h2d_pos.assign(trace.tensors.size(), 0);
  c.d2h_size = PlaceInQueue(
      trace, std::move(d2h_items),
      [&](int32_t item) {
        return item < num_tensors ? trace.tensors[item].producer_op
                                  : fixed(item).after_op;
      },
      c.d2h_pos, c.d2h_fixed);
  c.h2d_size = PlaceInQueue(
      trace, std::move(h2d_items),
      [&](int32_t item) {
        return item < num_tensors ? trace.tensors[item].first_backward_use
                                  : fixed(item).before_op;
      },
      c.h2d_pos, c.h2d_fixed);
}

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
  PlaceQueues(trace, candidates, c);
  // Ranking.
  c.ranked = candidates;
  if (options.ranking == SwapRanking::kProductionOrder) {
    std::sort(c.ranked.begin(), c.ranked.end(), [&](int32_t a, int32_t b) {
      return c.d2h_pos[a] < c.d2h_pos[b];
    });
  } else {
    std::stable_sort(c.ranked.begin(), c.ranked.end(),
                     [&](int32_t a, int32_t b) {
                       return RecomputeCostPerByte(trace.tensors[a]) >
                              RecomputeCostPerByte(trace.tensors[b]);
                     });
  }
  return c;
}

// The pass's two queues with the fixed transfers admitted. D2H: each is
// released when its after_op ends and due when its before_op starts (if
// any). H2D: released when its after_op ends, but not before the forward
// pass's end (the prefetches' release), and due when its before_op starts.
// A fixed transfer late with the fixed ones alone is due when it would end:
// no swap may delay it further.
struct LinkQueues {
  LinkQueues(const Trace& trace, const Hardware& hardware,
             const IdealTimeline& timeline, const SwapCandidates& c)
      : d2h(c.d2h_size), h2d(c.h2d_size), h2d_tight(c.h2d_size, kAbsent) {
    for (const FixedCopy& f : c.d2h_fixed) {
      const FixedTransfer& x = trace.fixed_transfers[f.index];
      const int64_t ns = TransferNs(x.size_bytes, hardware.d2h_bytes_per_second,
                                    hardware.transfer_latency_ns);
      const int64_t release = x.after_op < 0 ? 0 : timeline.End(x.after_op);
      int64_t due = CopyQueue::kNone;
      if (x.before_op >= 0) {
        due = std::max(timeline.op_start_ns[x.before_op],
                       d2h.End(f.pos, ns, release));
      }
      d2h.Admit(f.pos, ns, release, due);
    }
    for (const FixedCopy& f : c.h2d_fixed) {
      const FixedTransfer& x = trace.fixed_transfers[f.index];
      const int64_t ns = TransferNs(x.size_bytes, hardware.h2d_bytes_per_second,
                                    hardware.transfer_latency_ns);
      const int64_t release =
          std::max(timeline.forward_end_ns,
                   x.after_op < 0 ? 0 : timeline.End(x.after_op));
      const int64_t due = std::max(timeline.op_start_ns[x.before_op],
                                   h2d.End(f.pos, ns, release));
      h2d.Admit(f.pos, ns, release, due);
      h2d_tight.Add(f.pos + 1, c.h2d_size, ns);
      // A prefetch ahead of it in the queue delays it too: its slack from
      // the prefetches' release, as a prefetch's own (at least 0: the due
      // is at least its end with the fixed transfers alone).
      const int64_t tight =
          timeline.forward_end_ns + h2d.Before(f.pos) + ns - due;
      h2d_tight.Add(f.pos, f.pos + 1, tight - h2d_tight.Get(f.pos));
    }
  }

  CopyQueue d2h;
  CopyQueue h2d;
  // Per admitted prefetch, the negated slack of the estimate that it and
  // every copy before it start at its release: D - release - P(m); per
  // fixed transfer, the same from the prefetches' release.
  MaxSegmentTree h2d_tight;
};

}  // namespace

std::vector<int32_t> SelectSwaps(const Trace& trace, const Hardware& hardware,
                                 const IdealTimeline& timeline,
                                 int64_t budget_bytes,
                                 const PlannerOptions& options) {
  std::vector<int32_t> admitted;
  if (!options.link_budget_pass) return admitted;
  const SwapCandidates c =
      FindCandidates(trace, timeline, budget_bytes, options);
  LinkQueues q(trace, hardware, timeline, c);
  const bool fixed_h2d = !c.h2d_fixed.empty();
  const int n = c.h2d_size;
  int64_t swapped = 0;
  const int64_t bytes_wanted =
      std::max<int64_t>(0, AllKeepPeakBytes(trace) - budget_bytes);
  const int64_t cap = hardware.host_pinned_memory_bytes > 0
                          ? hardware.host_pinned_memory_bytes
                          : std::numeric_limits<int64_t>::max();
  for (size_t k = 0; k < c.ranked.size(); ++k) {
    if (k % kSelectStopPollCandidates == 0 && StopRequested()) break;
    const int32_t t = c.ranked[k];
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
    const int64_t produced = timeline.End(tensor.producer_op);
    if (!q.d2h.Fits(i, d2h_ns, produced, c.deadline[t])) continue;
    // H2D: every prefetch up to this one starts at its release (the
    // forward pass's end, or its offload's deadline if later); later
    // prefetches (positions > j) each finish h2d_ns later.
    const int j = c.h2d_pos[t];
    const int64_t h2d_deadline =
        timeline.op_start_ns[tensor.first_backward_use];
    const int64_t release = std::max(timeline.forward_end_ns, c.deadline[t]);
    const int64_t own_h2d_slack =
        h2d_deadline - release - h2d_ns - q.h2d.Before(j);
    if (own_h2d_slack < 0) continue;
    const auto [later_tight, later_pos] = q.h2d_tight.Max(j + 1, n);
    if (later_pos >= 0 && later_tight > kAbsent / 2 && -later_tight < h2d_ns)
      continue;
    // The fixed transfers: their own releases, in the exact FIFO bound.
    if (fixed_h2d && !q.h2d.Fits(j, h2d_ns, CopyQueue::kNone, h2d_deadline)) {
      continue;
    }
    q.d2h.Admit(i, d2h_ns, produced, c.deadline[t]);
    q.h2d.Admit(j, h2d_ns, CopyQueue::kNone, h2d_deadline);
    q.h2d_tight.Add(j + 1, n, h2d_ns);
    q.h2d_tight.Add(j, j + 1, -own_h2d_slack - q.h2d_tight.Get(j));
    admitted.push_back(t);
    swapped += tensor.size_bytes;
  }
  return admitted;
}

}  // namespace slackswap
