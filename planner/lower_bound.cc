#include "planner/lower_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"

namespace slackswap {
namespace {

constexpr int kOpsExamined = 16;

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
// cheapest per byte first; infinity beyond the recomputable bytes. Convex and
// piecewise linear.
class Knapsack {
 public:
  // `items`: (cost per byte, bytes), sorted by cost per byte.
  explicit Knapsack(const std::vector<std::pair<double, double>>& items)
      : items_(items) {
    bytes_.push_back(0);
    cost_.push_back(0);
    for (const auto& [cost_per_byte, size] : items) {
      bytes_.push_back(bytes_.back() + size);
      cost_.push_back(cost_.back() + cost_per_byte * size);
    }
  }
  double Cost(double x) const {
    if (x <= 0) return 0.0;
    if (x > bytes_.back() * (1 + 1e-12))
      return std::numeric_limits<double>::infinity();
    const size_t j =
        std::upper_bound(bytes_.begin(), bytes_.end(), x) - bytes_.begin();
    if (j >= bytes_.size()) return cost_.back();
    return cost_[j - 1] + items_[j - 1].first * (x - bytes_[j - 1]);
  }
  // Byte counts where the slope changes.
  const std::vector<double>& breakpoints() const { return bytes_; }

 private:
  const std::vector<std::pair<double, double>>& items_;
  std::vector<double> bytes_, cost_;
};

// Forward op: no rebuild runs before it, so it starts at t0 + s, where s is
// the stall before it. Minimum over s >= 0 of
//   s + K(max(0, excess - min(w * (t0 + s), swappable))).
// Convex and piecewise linear in s: the minimum is at s = 0 or where the
// argument of K crosses a breakpoint or the swap cap is reached.
double ForwardExtra(double excess, double w, double t0, double swappable,
                    const Knapsack& k) {
  auto f = [&](double s) {
    return s + k.Cost(excess - std::min(w * (t0 + s), swappable));
  };
  double best = f(0);
  auto consider = [&](double s) {
    if (s > 0 && std::isfinite(s)) best = std::min(best, f(s));
  };
  if (w > 0) {
    consider(swappable / w - t0);
    for (double b : k.breakpoints()) consider((excess - b) / w - t0);
  }
  return best;
}

// Backward op: rebuilds before it also give the link time, so with y the
// stall plus all recompute time, the op starts by t0 + y and the iteration
// takes at least ideal + y, where y >= K(max(0, excess - min(w (t0 + y),
// swappable))). The right side falls as y grows: bisect for the least y.
double BackwardExtra(double excess, double w, double t0, double swappable,
                     const Knapsack& k) {
  auto g = [&](double y) {
    return k.Cost(excess - std::min(w * (t0 + y), swappable));
  };
  double lo = 0, hi = g(0);
  if (!std::isfinite(hi)) return hi;
  if (hi <= 0) return 0;
  for (int i = 0; i < 100 && hi - lo > 0.5; ++i) {
    const double mid = (lo + hi) / 2;
    if (mid >= g(mid)) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return lo;
}

}  // namespace

LowerBound ComputeLowerBound(const Trace& trace, const Hardware& hardware,
                             int64_t budget_bytes) {
  LowerBound bound;
  bound.iteration_ns = trace.ideal_ns;
  const int32_t num_ops = trace.num_ops();

  // Bytes that must be resident at each op's start in every plan: its
  // allocation, the tensors it reads, and (in forward) every earlier tensor a
  // forward op at or after it still reads, plus tensors that can be neither
  // swapped nor recomputed while they live.
  std::vector<int64_t> required_diff(num_ops + 1, 0), live_diff(num_ops + 1, 0);
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    const Tensor& tensor = trace.tensors[t];
    AddRange(live_diff, tensor.producer_op, tensor.last_backward_use,
             tensor.size_bytes);
    if (tensor.swap_forbidden && tensor.recompute_forbidden) {
      AddRange(required_diff, tensor.producer_op + 1, tensor.last_backward_use,
               tensor.size_bytes);
    } else {
      AddRange(required_diff, tensor.producer_op + 1, tensor.last_forward_use,
               tensor.size_bytes);
    }
  }
  const std::vector<int64_t> live = Accumulate(live_diff);
  std::vector<int64_t> required = Accumulate(required_diff);
  for (int32_t o = 0; o < num_ops; ++o) {
    required[o] += trace.op_allocation_bytes[o];
    if (o >= trace.num_forward_ops) {
      for (int32_t t : trace.reads.Row(o)) {
        const Tensor& tensor = trace.tensors[t];
        if (!(tensor.swap_forbidden && tensor.recompute_forbidden))
          required[o] += tensor.size_bytes;
      }
    }
    if (required[o] > budget_bytes) {
      bound.feasible = false;
      bound.binding_op = o;
      bound.reason = absl::StrCat(
          "op ", o, " needs ", required[o],
          " bytes resident at once (its inputs, outputs and workspace, and ",
          "tensors that can be neither swapped nor recomputed), above the ",
          "budget of ", budget_bytes);
      return bound;
    }
  }

  // The most constrained ops.
  std::vector<int32_t> ops;
  for (int32_t o = 0; o < num_ops; ++o) {
    if (live[o] + trace.ops[o].workspace_bytes > budget_bytes) ops.push_back(o);
  }
  std::sort(ops.begin(), ops.end(), [&](int32_t a, int32_t b) {
    return live[a] + trace.ops[a].workspace_bytes !=
                   live[b] + trace.ops[b].workspace_bytes
               ? live[a] + trace.ops[a].workspace_bytes >
                     live[b] + trace.ops[b].workspace_bytes
               : a < b;
  });
  if (ops.size() > kOpsExamined) ops.resize(kOpsExamined);

  const double w =
      static_cast<double>(hardware.d2h_bytes_per_second) / 1e9;  // bytes per ns
  std::vector<int64_t> start(num_ops + 1, 0);
  for (int32_t o = 0; o < num_ops; ++o)
    start[o + 1] = start[o] + trace.ops[o].duration_ns;

  std::vector<std::pair<double, double>> items;
  for (int32_t o : ops) {
    const bool forward = o < trace.num_forward_ops;
    const double excess = static_cast<double>(
        live[o] + trace.ops[o].workspace_bytes - budget_bytes);
    double swappable = 0;
    items.clear();
    for (int32_t t = 0; t < trace.num_tensors(); ++t) {
      const Tensor& tensor = trace.tensors[t];
      // Removable at o: live, no forward op at or after o reads it, and (in
      // backward) no backward op up to o has needed it yet: once needed, a
      // tensor stays resident until its release.
      if (!(tensor.producer_op < o && tensor.last_forward_use < o &&
            o <= tensor.last_backward_use)) {
        continue;
      }
      if (!forward && tensor.first_backward_use <= o) continue;
      if (!tensor.swap_forbidden)
        swappable += static_cast<double>(tensor.size_bytes);
      if (!tensor.recompute_forbidden && tensor.size_bytes > 0) {
        items.emplace_back(
            static_cast<double>(tensor.recompute_ns) / tensor.size_bytes,
            static_cast<double>(tensor.size_bytes));
      }
    }
    std::sort(items.begin(), items.end());
    const Knapsack knapsack(items);
    const double t0 = static_cast<double>(start[o]);
    const double extra =
        forward ? ForwardExtra(excess, w, t0, swappable, knapsack)
                : BackwardExtra(excess, w, t0, swappable, knapsack);
    if (!std::isfinite(extra)) {
      bound.feasible = false;
      bound.binding_op = o;
      bound.reason = absl::StrCat(
          "op ", o, " cannot start within the budget of ", budget_bytes,
          " bytes: even swapping and recomputing every tensor that ",
          "allows it leaves too much resident");
      return bound;
    }
    // Round down: the bound must never exceed a real iteration time.
    const int64_t candidate =
        trace.ideal_ns + static_cast<int64_t>(std::floor(extra));
    if (candidate > bound.iteration_ns) {
      bound.iteration_ns = candidate;
      bound.binding_op = o;
    }
  }
  return bound;
}

}  // namespace slackswap
