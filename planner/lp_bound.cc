#include "planner/lp_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ClpEventHandler.hpp"
#include "ClpSimplex.hpp"
#include "CoinPackedMatrix.hpp"
#include "base/stop.h"

namespace slackswap {
namespace {

// Ends the simplex when the thread's StopFunction (base/stop.h) says so,
// polled every 64 iterations (Clp then reports status 5: stopped).
class StopHandler : public ClpEventHandler {
 public:
  explicit StopHandler(const StopFunction* stop) : stop_(stop) {}
  ClpEventHandler* clone() const override { return new StopHandler(*this); }
  int event(Event which) override {
    if (which != endOfIteration || stop_ == nullptr || !*stop_) return -1;
    if (++iterations_ % 64 != 0) return -1;
    return (*stop_)() ? 0 : -1;
  }

 private:
  const StopFunction* stop_;
  int64_t iterations_ = 0;
};

// Units inside the program: mebibytes and microseconds keep the
// coefficients within a few orders of magnitude of each other.
constexpr double kBytes = 1.0 / (1 << 20);
constexpr double kNs = 1.0 / 1000;

class Builder {
 public:
  int Column(double lower, double upper, double cost) {
    col_lower_.push_back(lower);
    col_upper_.push_back(upper);
    cost_.push_back(cost);
    return static_cast<int>(cost_.size()) - 1;
  }
  // Starts a row lower <= sum <= upper; Add() fills it.
  void Row(double lower, double upper) {
    row_lower_.push_back(lower);
    row_upper_.push_back(upper);
  }
  void Add(int column, double value) {
    if (value == 0 || values_.size() > kLinearProgramMaxNonzeros) return;
    rows_.push_back(static_cast<int>(row_lower_.size()) - 1);
    cols_.push_back(column);
    values_.push_back(value);
  }
  int rows() const { return static_cast<int>(row_lower_.size()); }
  int columns() const { return static_cast<int>(cost_.size()); }

  int64_t nonzeros() const { return static_cast<int64_t>(values_.size()); }

  // The optimum, or NaN (also when the dual simplex needs more than
  // `max_iterations`: a limit on iterations, not seconds, keeps the answer
  // the same on every run).
  double Solve(int max_iterations) const {
    const CoinPackedMatrix matrix(true, rows_.data(), cols_.data(),
                                  values_.data(),
                                  static_cast<CoinBigIndex>(values_.size()));
    ClpSimplex model;
    model.setLogLevel(0);
    model.loadProblem(matrix, col_lower_.data(), col_upper_.data(),
                      cost_.data(), row_lower_.data(), row_upper_.data());
    model.setMaximumIterations(max_iterations);
    StopHandler stop(CurrentStop());
    model.passInEventHandler(&stop);
    model.dual();
    if (!model.isProvenOptimal()) return std::nan("");
    return model.getObjValue();
  }

 private:
  std::vector<double> col_lower_, col_upper_, cost_, row_lower_, row_upper_;
  std::vector<int> rows_, cols_;
  std::vector<double> values_;
};

// The ops whose all-keep memory passes the budget (at most
// kLinearProgramOps, the largest excesses, in op order), each op's excess,
// and each op's start on the ideal timeline.
struct BindingOps {
  std::vector<int32_t> ops;
  std::vector<int64_t> excess;  // per op
  std::vector<int64_t> start;   // per op, and the end at num_ops
};

BindingOps FindBindingOps(const Trace& trace, int64_t budget_bytes) {
  const int32_t num_ops = trace.num_ops();
  BindingOps b;
  std::vector<int64_t> live(num_ops + 1, 0);
  b.start.assign(num_ops + 1, 0);
  for (const Tensor& t : trace.tensors) {
    live[t.producer_op] += t.size_bytes;
    live[t.last_backward_use + 1] -= t.size_bytes;
  }
  for (int32_t o = 0; o < num_ops; ++o) {
    if (o > 0) live[o] += live[o - 1];
    b.start[o + 1] = b.start[o] + trace.ops[o].duration_ns;
  }
  b.excess.assign(num_ops, 0);
  for (int32_t o = 0; o < num_ops; ++o) {
    b.excess[o] = live[o] + trace.transient_bytes(o) - budget_bytes;
    if (b.excess[o] > 0) b.ops.push_back(o);
  }
  std::stable_sort(b.ops.begin(), b.ops.end(), [&](int32_t x, int32_t y) {
    return b.excess[x] > b.excess[y];
  });
  if (b.ops.size() > kLinearProgramOps) b.ops.resize(kLinearProgramOps);
  std::sort(b.ops.begin(), b.ops.end());
  return b;
}

// The program's tensor columns: a swap and a drop fraction for each tensor
// removable at some chosen op (-1 where it may not be swapped or dropped).
struct TensorColumns {
  std::vector<int> swap, drop;   // per tensor
  std::vector<int32_t> tensors;  // those with a column
};

TensorColumns AddTensorColumns(const Trace& trace,
                               const std::vector<int32_t>& ops, Builder& lp) {
  TensorColumns c;
  c.swap.assign(trace.tensors.size(), -1);
  c.drop.assign(trace.tensors.size(), -1);
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    const Tensor& tensor = trace.tensors[t];
    if (tensor.size_bytes == 0) continue;
    const auto first =
        std::upper_bound(ops.begin(), ops.end(), tensor.last_forward_use);
    if (first == ops.end() || *first >= tensor.first_backward_use) continue;
    if (!tensor.swap_forbidden) c.swap[t] = lp.Column(0, 1, 0);
    if (!tensor.recompute_forbidden) {
      c.drop[t] = lp.Column(0, 1, tensor.recompute_ns * kNs);
    }
    if (c.swap[t] >= 0 || c.drop[t] >= 0) c.tensors.push_back(t);
    if (c.swap[t] >= 0 && c.drop[t] >= 0) {
      lp.Row(-COIN_DBL_MAX, 1);
      lp.Add(c.swap[t], 1);
      lp.Add(c.drop[t], 1);
    }
  }
  return c;
}

// One chosen op's columns (its stall, non-decreasing from the previous
// op's, and its lateness) and rows (memory, D2H and, in the backward pass,
// H2D). w_d and w_h: the links' rates in the program's units.
void AddOpRows(const Trace& trace, const BindingOps& b, const TensorColumns& c,
               int32_t o, bool last, double w_d, double w_h,
               int& previous_stall, Builder& lp) {
  // R = sum r_t d_t appears in several rows.
  auto add_recompute = [&](double factor) {
    for (int32_t t : c.tensors) {
      if (c.drop[t] >= 0)
        lp.Add(c.drop[t], factor * trace.tensors[t].recompute_ns * kNs);
    }
  };
  const bool backward = o >= trace.num_forward_ops;
  const int stall = lp.Column(0, COIN_DBL_MAX, last ? 1 : 0);
  const int late = lp.Column(0, COIN_DBL_MAX, 0);  // U_o
  if (previous_stall >= 0) {
    lp.Row(-COIN_DBL_MAX, 0);  // sigma non-decreasing
    lp.Add(previous_stall, 1);
    lp.Add(stall, -1);
  }
  previous_stall = stall;
  // Memory.
  lp.Row(static_cast<double>(b.excess[o]) * kBytes, COIN_DBL_MAX);
  for (int32_t t : c.tensors) {
    const Tensor& x = trace.tensors[t];
    if (!(x.last_forward_use < o && o < x.first_backward_use)) continue;
    const double size = static_cast<double>(x.size_bytes) * kBytes;
    if (c.swap[t] >= 0) lp.Add(c.swap[t], size);
    if (c.drop[t] >= 0) lp.Add(c.drop[t], size);
  }
  lp.Add(late, -1);
  // D2H.
  lp.Row(-COIN_DBL_MAX, w_d * static_cast<double>(b.start[o]) * kNs);
  for (int32_t t : c.tensors) {
    const Tensor& x = trace.tensors[t];
    if (c.swap[t] < 0 ||
        !(x.last_forward_use < o && o < x.first_backward_use)) {
      continue;
    }
    lp.Add(c.swap[t], static_cast<double>(x.size_bytes) * kBytes);
  }
  lp.Add(late, -1);
  lp.Add(stall, -w_d);
  if (backward) add_recompute(-w_d);
  // H2D.
  if (!backward) return;
  int64_t earliest = std::numeric_limits<int64_t>::max();
  for (int32_t t : c.tensors) {
    const Tensor& x = trace.tensors[t];
    if (c.swap[t] >= 0 && x.first_backward_use <= o)
      earliest = std::min(earliest, b.start[x.last_forward_use + 1]);
  }
  if (earliest == std::numeric_limits<int64_t>::max()) return;
  lp.Row(-COIN_DBL_MAX, w_h * static_cast<double>(b.start[o] - earliest) * kNs);
  for (int32_t t : c.tensors) {
    const Tensor& x = trace.tensors[t];
    if (c.swap[t] >= 0 && x.first_backward_use <= o)
      lp.Add(c.swap[t], static_cast<double>(x.size_bytes) * kBytes);
  }
  lp.Add(stall, -w_h);
  add_recompute(-w_h);
}

}  // namespace

LinearProgramBound ComputeLinearProgramBound(const Trace& trace,
                                             const Hardware& hardware,
                                             int64_t budget_bytes) {
  LinearProgramBound bound;
  bound.iteration_ns = trace.ideal_ns;
  const BindingOps b = FindBindingOps(trace, budget_bytes);
  if (b.ops.empty()) {
    bound.solved = true;
    return bound;
  }
  // Tensors removable at some chosen op get their fractions.
  Builder lp;
  const TensorColumns columns = AddTensorColumns(trace, b.ops, lp);
  // Each chosen op's rows hold at most two entries per tensor in the
  // program: refuse early rather than build what will not be solved.
  if (static_cast<int64_t>(columns.tensors.size()) *
          static_cast<int64_t>(b.ops.size()) >
      4 * kLinearProgramMaxNonzeros) {
    return bound;
  }
  const double w_d =
      static_cast<double>(hardware.d2h_bytes_per_second) * kBytes / (1e9 * kNs);
  const double w_h =
      static_cast<double>(hardware.h2d_bytes_per_second) * kBytes / (1e9 * kNs);
  int previous_stall = -1;
  for (size_t i = 0; i < b.ops.size(); ++i) {
    AddOpRows(trace, b, columns, b.ops[i], i + 1 == b.ops.size(), w_d, w_h,
              previous_stall, lp);
  }
  bound.rows = lp.rows();
  bound.columns = lp.columns();
  // A trace this large would cost the solver seconds and gigabytes: the fast
  // bound stands alone.
  if (lp.nonzeros() > kLinearProgramMaxNonzeros) return bound;
  const double optimum = lp.Solve(kLinearProgramMaxIterations);
  if (!std::isfinite(optimum)) return bound;
  bound.solved = true;
  // Back to nanoseconds, less a margin for the solver's tolerances (1e-7
  // relative), rounded down: the bound must never exceed a real iteration.
  const double extra_ns = optimum / kNs;
  const double margin = 1e-6 * std::abs(extra_ns) + 1;
  bound.iteration_ns =
      trace.ideal_ns +
      std::max<int64_t>(0, static_cast<int64_t>(std::floor(extra_ns - margin)));
  return bound;
}

}  // namespace slackswap
