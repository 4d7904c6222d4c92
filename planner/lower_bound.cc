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

// Minimum over s >= 0 of s + K(max(0, excess - min(w * (t0 + s), swappable))),
// where K is the fractional-knapsack cost of dropping that many bytes from
// `items` (cost per byte ascending). Infinity if no s makes it possible.
double BestStallPlusRecompute(
    double excess, double w, double t0, double swappable,
    const std::vector<std::pair<double, double>>& items) {
  // Cumulative bytes and cost at each breakpoint of K.
  std::vector<double> bytes{0}, cost{0};
  for (const auto& [cost_per_byte, size] : items) {
    bytes.push_back(bytes.back() + size);
    cost.push_back(cost.back() + cost_per_byte * size);
  }
  auto knapsack = [&](double x) {
    if (x <= 0) return 0.0;
    if (x > bytes.back() * (1 + 1e-12))
      return std::numeric_limits<double>::infinity();
    const size_t j =
        std::upper_bound(bytes.begin(), bytes.end(), x) - bytes.begin();
    if (j >= bytes.size()) return cost.back();
    const double per_byte = items[j - 1].first;
    return cost[j - 1] + per_byte * (x - bytes[j - 1]);
  };
  auto f = [&](double s) {
    return s + knapsack(excess - std::min(w * (t0 + s), swappable));
  };
  // f is convex and piecewise linear in s; its minimum is at s = 0 or where
  // the argument of K crosses a breakpoint or the swap cap is reached.
  double best = f(0);
  auto consider = [&](double s) {
    if (s > 0 && std::isfinite(s)) best = std::min(best, f(s));
  };
  if (w > 0) {
    consider(swappable / w - t0);
    for (double b : bytes) consider((excess - b) / w - t0);
  }
  return best;
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

  // The most constrained forward ops.
  std::vector<int32_t> ops;
  for (int32_t o = 0; o < trace.num_forward_ops; ++o) {
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
    const double excess = static_cast<double>(
        live[o] + trace.ops[o].workspace_bytes - budget_bytes);
    double swappable = 0;
    items.clear();
    for (int32_t t = 0; t < trace.num_tensors(); ++t) {
      const Tensor& tensor = trace.tensors[t];
      // Removable at o: live, and no forward op at or after o reads it.
      if (!(tensor.producer_op < o && tensor.last_forward_use < o &&
            o <= tensor.last_backward_use)) {
        continue;
      }
      if (!tensor.swap_forbidden)
        swappable += static_cast<double>(tensor.size_bytes);
      if (!tensor.recompute_forbidden && tensor.size_bytes > 0) {
        items.emplace_back(
            static_cast<double>(tensor.recompute_ns) / tensor.size_bytes,
            static_cast<double>(tensor.size_bytes));
      }
    }
    std::sort(items.begin(), items.end());
    const double extra = BestStallPlusRecompute(
        excess, w, static_cast<double>(start[o]), swappable, items);
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
