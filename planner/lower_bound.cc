#include "planner/lower_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/strings/str_cat.h"
#include "base/stop.h"
#include "planner/lp_bound.h"
#include "planner/traffic_run.h"

namespace slackswap {
namespace {

constexpr int kOpsExamined = 16;
// Whole rebuilds are searched at ops with at most this many recomputable
// tensors removable, within this many nodes each (the fractional knapsack is
// already close where many small tensors are removable).
constexpr size_t kWholeDropTensors = 64;
constexpr int64_t kWholeDropNodes = 1 << 14;
// With fixed transfers: the parameter fetches whose ops wait longest, each
// tried at every examined op.
constexpr size_t kFetchWaitsExamined = 8;

// Adds `bytes` to ops [first, last] of a difference array.
void AddRange(std::vector<int64_t>& diff, int32_t first, int32_t last,
              int64_t bytes) {
  if (first > last) return;
  diff[first] += bytes;
  diff[last + 1] -= bytes;
}

std::vector<int64_t> Accumulate(std::vector<int64_t> diff) {
  for (size_t i = 1; i < diff.size(); ++i) diff[i] += diff[i - 1];
  diff.pop_back();
  return diff;
}

// The fractional knapsack K(x): the least recompute time that drops x bytes,
// cheapest per byte first. Convex and piecewise linear. Past the
// recomputable bytes it is infinite; the callers only ask there when the
// link can take the rest, so a few bytes of rounding past the end are
// forgiven rather than turned into infinity.
class Knapsack {
 public:
  // `items`: (cost per byte, bytes), sorted by cost per byte.
  explicit Knapsack(
      const std::vector<std::pair<long double, long double>>& items)
      : items_(items) {
    bytes_.push_back(0);
    cost_.push_back(0);
    for (const auto& [cost_per_byte, size] : items) {
      bytes_.push_back(bytes_.back() + size);
      cost_.push_back(cost_.back() + cost_per_byte * size);
    }
  }
  long double Cost(long double x) const {
    if (x <= 0) return 0;
    const long double total = bytes_.back();
    if (x > total) {
      if (x - total > 1 + total * 1e-12L)
        return std::numeric_limits<long double>::infinity();
      return cost_.back();
    }
    const size_t j =
        std::upper_bound(bytes_.begin(), bytes_.end(), x) - bytes_.begin();
    if (j >= bytes_.size()) return cost_.back();
    return cost_[j - 1] + items_[j - 1].first * (x - bytes_[j - 1]);
  }
  long double total_bytes() const { return bytes_.back(); }
  // Byte counts where the slope changes, and the cost there.
  const std::vector<long double>& breakpoints() const { return bytes_; }
  const std::vector<long double>& breakpoint_costs() const { return cost_; }

 private:
  const std::vector<std::pair<long double, long double>>& items_;
  std::vector<long double> bytes_, cost_;
};

// Op o starts at t0 + s, where s is the stall and rebuild time before it
// (no rebuild runs before a forward op). A tensor dropped and gone at o's
// start is rebuilt after it, so those rebuilds are apart from s: the
// iteration takes at least ideal + s + K(dropped bytes). Minimum over s >= 0
// of
//   s + K(max(0, excess - min(w * (t0 + s), swappable))).
// Convex and piecewise linear in s: the minimum is at s = 0 or where the
// argument of K reaches a breakpoint or the swap cap is reached. At a
// breakpoint the cost is the breakpoint's own (no rounding of the argument).
long double ExtraTime(long double excess, long double w, long double t0,
                      long double swappable, const Knapsack& k) {
  auto f = [&](long double s) {
    return s + k.Cost(excess - std::min(w * (t0 + s), swappable));
  };
  long double best = f(0);
  if (w <= 0) return best;
  auto consider = [&](long double s, long double value) {
    if (s > 0 && std::isfinite(s)) best = std::min(best, value);
  };
  const long double cap = swappable / w - t0;
  consider(cap, cap + k.Cost(excess - swappable));
  const auto& bytes = k.breakpoints();
  const auto& costs = k.breakpoint_costs();
  for (size_t i = 0; i < bytes.size(); ++i) {
    // The link takes excess - bytes[i]; the knapsack drops bytes[i].
    const long double linked = excess - bytes[i];
    if (linked < 0 || linked > swappable) continue;
    const long double s = linked / w - t0;
    consider(s, s + costs[i]);
  }
  return best;
}

// The same minimum with whole rebuilds: a tensor is dropped or not, so the
// knapsack's last, split tensor becomes a choice (VGG-16's activations are
// hundreds of megabytes: half of one is a loose bound). Offloads stay
// fractional, and a dropped tensor's bytes leave the swappable ones:
//   min over dropped sets R and s >= 0 of  s + r(R)
//   such that  bytes(R) + min(w * (t0 + s), swappable - swappable(R)) >= e.
// Depth-first branch and bound over the tensors cheapest per byte first; a
// node's bound covers what is left fractionally, with the stall as one more
// item at 1/w ns per byte. Returns nullopt past `max_nodes` (the fractional
// bound then stands).
struct DropItem {
  long double bytes = 0;
  long double cost = 0;  // recompute ns
  bool swappable = false;
};

class WholeDrops {
 public:
  WholeDrops(const std::vector<DropItem>& items, long double w, long double t0,
             int64_t max_nodes)
      : items_(items), w_(w), t0_(t0), max_nodes_(max_nodes) {}

  std::optional<long double> Solve(long double excess, long double swappable) {
    Visit(0, excess, swappable, 0);
    if (aborted_ || !std::isfinite(best_)) return std::nullopt;
    return best_;
  }

 private:
  // Stall needed once no more tensors are dropped: `need` bytes to offload.
  long double StallFor(long double need, long double swappable) const {
    if (need <= 0) return 0;
    if (need > swappable || w_ <= 0) {
      return std::numeric_limits<long double>::infinity();
    }
    return std::max<long double>(0, need / w_ - t0_);
  }
  // Fractional cover of `need` by items from k and the stall.
  long double Relaxed(size_t k, long double need, long double swappable) const {
    const long double free_link = w_ > 0 ? std::min(w_ * t0_, swappable) : 0;
    need -= free_link;
    if (need <= 0) return 0;
    long double stall_bytes = swappable - free_link;
    const long double stall_per_byte =
        w_ > 0 ? 1 / w_ : std::numeric_limits<long double>::infinity();
    long double cost = 0;
    for (size_t i = k; i < items_.size() && need > 0; ++i) {
      const DropItem& item = items_[i];
      if (stall_bytes > 0 && stall_per_byte * item.bytes < item.cost) {
        const long double take = std::min(need, stall_bytes);
        cost += take * stall_per_byte;
        need -= take;
        stall_bytes = 0;
        if (need <= 0) break;
      }
      const long double take = std::min(need, item.bytes);
      cost += item.cost * (take / item.bytes);
      need -= take;
    }
    if (need > 0 && stall_bytes > 0) {
      const long double take = std::min(need, stall_bytes);
      cost += take * stall_per_byte;
      need -= take;
    }
    return need > 0 ? std::numeric_limits<long double>::infinity() : cost;
  }
  void Visit(size_t k, long double need, long double swappable,
             long double cost) {
    if (aborted_) return;
    if (++nodes_ > max_nodes_) {
      aborted_ = true;
      return;
    }
    best_ = std::min(best_, cost + StallFor(need, swappable));
    if (k == items_.size() || need <= 0) return;
    if (cost + Relaxed(k, need, swappable) >= best_) return;
    const DropItem& item = items_[k];
    if (!Dominated(item)) {
      Visit(k + 1, need - item.bytes,
            item.swappable ? swappable - item.bytes : swappable,
            cost + item.cost);
    }
    excluded_.push_back(k);
    Visit(k + 1, need, swappable, cost);
    excluded_.pop_back();
  }
  // Dropping `item` where an excluded tensor at least as large, no costlier
  // and swappable only if `item` is, could be dropped instead, is never
  // better: the swap leaves at least as many bytes gone for no more time.
  // (Tensors of one size are otherwise tried in every combination.)
  bool Dominated(const DropItem& item) const {
    for (const size_t j : excluded_) {
      const DropItem& other = items_[j];
      if (other.bytes >= item.bytes && other.cost <= item.cost &&
          (item.swappable || !other.swappable)) {
        return true;
      }
    }
    return false;
  }

  const std::vector<DropItem>& items_;
  const long double w_, t0_;
  const int64_t max_nodes_;
  std::vector<size_t> excluded_;  // on the path to the current node
  int64_t nodes_ = 0;
  bool aborted_ = false;
  long double best_ = std::numeric_limits<long double>::infinity();
};

// The ops with an excess, the largest first (ties: the earlier op), at most
// kOpsExamined of them.
std::vector<int32_t> MostConstrainedOps(const std::vector<int64_t>& excess) {
  std::vector<int32_t> ops;
  for (int32_t o = 0; o < static_cast<int32_t>(excess.size()); ++o) {
    if (excess[o] > 0) ops.push_back(o);
  }
  std::sort(ops.begin(), ops.end(), [&](int32_t a, int32_t b) {
    return excess[a] != excess[b] ? excess[a] > excess[b] : a < b;
  });
  if (ops.size() > kOpsExamined) ops.resize(kOpsExamined);
  return ops;
}

// The recomputable tensors of positive size, cheapest per byte first (exact
// ratios; ties by id).
std::vector<int32_t> RecomputableByCost(const Trace& trace) {
  std::vector<int32_t> by_cost;
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    const Tensor& tensor = trace.tensors[t];
    if (!tensor.recompute_forbidden && tensor.size_bytes > 0)
      by_cost.push_back(t);
  }
  std::sort(by_cost.begin(), by_cost.end(), [&](int32_t a, int32_t b) {
    const Tensor& x = trace.tensors[a];
    const Tensor& y = trace.tensors[b];
    if (CheaperToRebuildPerByte(x, y)) return true;
    if (CheaperToRebuildPerByte(y, x)) return false;
    return a < b;
  });
  return by_cost;
}

// The least time beyond op o's start `t0` that removing `excess` bytes at o
// costs (ExtraTime, and WholeDrops where few tensors are removable); the
// tensors marked in `free` (if given) cost nothing to rebuild. nullopt where
// the removable bytes cannot cover the excess.
std::optional<long double> OpExtra(const Trace& trace,
                                   const std::vector<int32_t>& by_cost,
                                   int32_t o, int64_t excess, long double w,
                                   int64_t t0_ns,
                                   const std::vector<uint8_t>* free) {
  auto removable_at = [&](const Tensor& tensor) {
    return tensor.last_forward_use < o && o < tensor.first_backward_use;
  };
  long double swappable = 0;
  for (const Tensor& tensor : trace.tensors) {
    if (!tensor.swap_forbidden && removable_at(tensor))
      swappable += static_cast<long double>(tensor.size_bytes);
  }
  std::vector<std::pair<long double, long double>> items;
  std::vector<DropItem> drops;
  // The free tensors first (the cheapest per byte), then the others.
  for (int pass = free == nullptr ? 1 : 0; pass < 2; ++pass) {
    for (int32_t t : by_cost) {
      const Tensor& tensor = trace.tensors[t];
      if (!removable_at(tensor)) continue;
      const bool is_free = free != nullptr && (*free)[t] != 0;
      if (is_free != (pass == 0)) continue;
      const long double bytes = static_cast<long double>(tensor.size_bytes);
      const long double cost =
          is_free ? 0 : static_cast<long double>(tensor.recompute_ns);
      items.emplace_back(cost / bytes, bytes);
      drops.push_back({bytes, cost, !tensor.swap_forbidden});
    }
  }
  const Knapsack knapsack(items);
  const long double t0 = static_cast<long double>(t0_ns);
  const long double e = static_cast<long double>(excess);
  long double extra = ExtraTime(e, w, t0, swappable, knapsack);
  if (!std::isfinite(extra)) return std::nullopt;
  if (drops.size() <= kWholeDropTensors) {
    const std::optional<long double> whole =
        WholeDrops(drops, w, t0, kWholeDropNodes).Solve(e, swappable);
    if (whole.has_value()) extra = std::max(extra, *whole);
  }
  return extra;
}

// A parameter fetch (an H2D fixed transfer released after an op and needed
// by a later one) that takes longer than the profiled ops between: its op
// waits at least wait_ns in every plan, less the rebuilds that run between.
struct FetchWait {
  int32_t after_op = 0;
  int32_t before_op = 0;
  int64_t wait_ns = 0;
};

// The fetches with the longest waits, at most kFetchWaitsExamined.
std::vector<FetchWait> FetchWaits(const Trace& trace, const Hardware& hardware,
                                  const std::vector<int64_t>& start) {
  std::vector<FetchWait> out;
  for (const FixedTransfer& x : trace.fixed_transfers) {
    if (x.direction != Direction::kH2D || x.after_op < 0 ||
        x.before_op <= x.after_op) {
      continue;
    }
    const int64_t wait = TransferNs(x.size_bytes, hardware.h2d_bytes_per_second,
                                    hardware.transfer_latency_ns) -
                         (start[x.before_op] - start[x.after_op + 1]);
    if (wait > 0) out.push_back({x.after_op, x.before_op, wait});
  }
  std::sort(out.begin(), out.end(), [](const FetchWait& a, const FetchWait& b) {
    if (a.wait_ns != b.wait_ns) return a.wait_ns > b.wait_ns;
    return a.before_op != b.before_op ? a.before_op < b.before_op
                                      : a.after_op < b.after_op;
  });
  if (out.size() > kFetchWaitsExamined) out.resize(kFetchWaitsExamined);
  return out;
}

// Marks in `window` the tensors whose rebuild can run between the fetch's
// release and its op: a rebuild runs just before its tensor's need, which is
// at most its first backward use, so those first used after after_op and
// at most before_op, and, as a rebuild reads its recompute inputs (rebuilt
// with it if recomputed), theirs.
void FetchWindow(const Trace& trace, const FetchWait& f,
                 std::vector<uint8_t>& window) {
  window.assign(trace.tensors.size(), 0);
  std::vector<int32_t> stack;
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    const int32_t use = trace.tensors[t].first_backward_use;
    if (f.after_op < use && use <= f.before_op) {
      window[t] = 1;
      stack.push_back(t);
    }
  }
  while (!stack.empty()) {
    const int32_t t = stack.back();
    stack.pop_back();
    for (int32_t input : trace.recompute_inputs.Row(t)) {
      if (window[input] == 0) {
        window[input] = 1;
        stack.push_back(input);
      }
    }
  }
}

}  // namespace

bool CheaperToRebuildPerByte(const Tensor& a, const Tensor& b) {
  return absl::int128(a.recompute_ns) * b.size_bytes <
         absl::int128(b.recompute_ns) * a.size_bytes;
}

ProvenFloor ComputeProvenFloor(const Trace& trace) {
  const int32_t num_ops = trace.num_ops();
  std::vector<int64_t> diff(num_ops + 1, 0);
  for (const Tensor& tensor : trace.tensors) {
    AddRange(diff, tensor.producer_op, tensor.last_backward_use,
             tensor.size_bytes);
    if (!(tensor.swap_forbidden && tensor.recompute_forbidden)) {
      AddRange(diff, tensor.last_forward_use + 1, tensor.first_backward_use - 1,
               -tensor.size_bytes);
    }
  }
  const std::vector<int64_t> held = Accumulate(diff);
  ProvenFloor floor;
  for (int32_t o = 0; o < num_ops; ++o) {
    const int64_t bytes = held[o] + trace.transient_bytes(o);
    if (floor.op < 0 || bytes > floor.bytes) {
      floor.bytes = bytes;
      floor.op = o;
    }
  }
  return floor;
}

LowerBound ComputeLowerBound(const Trace& trace, const Hardware& hardware,
                             int64_t budget_bytes) {
  LowerBound bound;
  bound.iteration_ns = trace.ideal_ns;
  const int32_t num_ops = trace.num_ops();

  // At each op's start, in the all-keep run: `live` bytes (the op's
  // allocation and every tensor produced and not yet released), of which
  // `removable` could be gone in some plan (swappable or recomputable, no
  // forward op at or after it reads it, and no backward op up to it has
  // needed it yet: from then on a tensor stays resident until its last
  // reader). The rest must be resident in every plan. Integers: the
  // infeasibility verdict is exact.
  std::vector<int64_t> live_diff(num_ops + 1, 0),
      removable_diff(num_ops + 1, 0);
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    const Tensor& tensor = trace.tensors[t];
    AddRange(live_diff, tensor.producer_op, tensor.last_backward_use,
             tensor.size_bytes);
    if (!(tensor.swap_forbidden && tensor.recompute_forbidden)) {
      AddRange(removable_diff, tensor.last_forward_use + 1,
               tensor.first_backward_use - 1, tensor.size_bytes);
    }
  }
  const std::vector<int64_t> live = Accumulate(live_diff);
  const std::vector<int64_t> removable = Accumulate(removable_diff);
  std::vector<int64_t> excess(num_ops);
  for (int32_t o = 0; o < num_ops; ++o) {
    excess[o] = live[o] + trace.transient_bytes(o) - budget_bytes;
    if (excess[o] > removable[o]) {
      bound.feasible = false;
      bound.binding_op = o;
      bound.reason = absl::StrCat(
          "op ", o, " needs ",
          live[o] + trace.transient_bytes(o) - removable[o],
          " bytes resident at its start in every plan (its allocation and ",
          "workspace, the tensors forward ops from it on still read, the ",
          "tensors backward ops up to it have needed and later ones still ",
          "read, and tensors that can be neither swapped nor recomputed), ",
          "above the budget of ", budget_bytes);
      return bound;
    }
  }

  const std::vector<int32_t> ops = MostConstrainedOps(excess);

  const long double w =
      static_cast<long double>(hardware.d2h_bytes_per_second) / 1e9L;
  std::vector<int64_t> start(num_ops + 1, 0);
  for (int32_t o = 0; o < num_ops; ++o)
    start[o + 1] = start[o] + trace.ops[o].duration_ns;
  // With fixed transfers, op o starts no earlier than in the traffic's own
  // run, and the transfers after the last op follow it.
  const bool traffic = !trace.fixed_transfers.empty();
  TrafficRun run;
  if (traffic) {
    run = RunTrafficAlone(trace, hardware);
    bound.iteration_ns = std::max(bound.iteration_ns, run.iteration_ns);
  }

  // Recomputable tensors cheapest per byte first, once: each op's knapsack
  // takes them in this order.
  const std::vector<int32_t> by_cost = RecomputableByCost(trace);
  const std::vector<FetchWait> fetches =
      traffic ? FetchWaits(trace, hardware, start) : std::vector<FetchWait>();
  std::vector<uint8_t> window;
  for (int32_t o : ops) {
    // A call that was stopped gets the bound of the ops so far: weaker,
    // still a bound (each op's is), and the caller stops at its next poll.
    // On a large trace each op's knapsack takes milliseconds (under the
    // sanitizers, tens).
    if (StopRequested()) break;
    const int64_t op_start = traffic ? run.op_start[o] : start[o];
    const std::optional<long double> extra =
        OpExtra(trace, by_cost, o, excess[o], w, op_start, nullptr);
    // Finite: the removable bytes cover the excess (checked above).
    if (!extra.has_value()) continue;
    // Op o's start, the profiled ops from it on, the fixed transfers after
    // the last op. Round down: the bound must never exceed a real iteration.
    const int64_t base =
        traffic ? op_start + (start[num_ops] - start[o]) + run.tail_ns
                : trace.ideal_ns;
    int64_t candidate = base + static_cast<int64_t>(std::floor(*extra));
    // A parameter fetch released at or after o: its op waits `wait` beyond
    // the ops between, less the rebuilds that can run in that window, which
    // cost nothing more there (docs/planner.md).
    for (const FetchWait& f : fetches) {
      if (f.after_op < o) continue;
      FetchWindow(trace, f, window);
      const std::optional<long double> rest =
          OpExtra(trace, by_cost, o, excess[o], w, op_start, &window);
      if (!rest.has_value()) continue;
      candidate =
          std::max(candidate,
                   base + f.wait_ns + static_cast<int64_t>(std::floor(*rest)));
    }
    if (candidate > bound.iteration_ns) {
      bound.iteration_ns = candidate;
      bound.binding_op = o;
    }
  }
  return bound;
}

LowerBound ComputeLowerBound(const Trace& trace, const Hardware& hardware,
                             int64_t budget_bytes, bool linear_program) {
  LowerBound bound = ComputeLowerBound(trace, hardware, budget_bytes);
  if (!linear_program || !bound.feasible) return bound;
  const LinearProgramBound lp =
      ComputeLinearProgramBound(trace, hardware, budget_bytes);
  if (lp.solved && lp.iteration_ns > bound.iteration_ns) {
    bound.iteration_ns = lp.iteration_ns;
    bound.source = BoundSource::kLinearProgram;
    bound.binding_op = -1;
  }
  return bound;
}

}  // namespace slackswap
