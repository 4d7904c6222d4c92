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

}  // namespace

LinearProgramBound ComputeLinearProgramBound(const Trace& trace,
                                             const Hardware& hardware,
                                             int64_t budget_bytes) {
  LinearProgramBound bound;
  bound.iteration_ns = trace.ideal_ns;
  const int32_t num_ops = trace.num_ops();
  std::vector<int64_t> live(num_ops + 1, 0), start(num_ops + 1, 0);
  for (const Tensor& t : trace.tensors) {
    live[t.producer_op] += t.size_bytes;
    live[t.last_backward_use + 1] -= t.size_bytes;
  }
  for (int32_t o = 0; o < num_ops; ++o) {
    if (o > 0) live[o] += live[o - 1];
    start[o + 1] = start[o] + trace.ops[o].duration_ns;
  }
  std::vector<int32_t> ops;
  std::vector<int64_t> excess(num_ops, 0);
  for (int32_t o = 0; o < num_ops; ++o) {
    excess[o] = live[o] + trace.ops[o].workspace_bytes - budget_bytes;
    if (excess[o] > 0) ops.push_back(o);
  }
  if (ops.empty()) {
    bound.solved = true;
    return bound;
  }
  std::stable_sort(ops.begin(), ops.end(),
                   [&](int32_t a, int32_t b) { return excess[a] > excess[b]; });
  if (ops.size() > kLinearProgramOps) ops.resize(kLinearProgramOps);
  std::sort(ops.begin(), ops.end());

  // Tensors removable at some chosen op get their fractions.
  Builder lp;
  std::vector<int> swap_col(trace.tensors.size(), -1),
      drop_col(trace.tensors.size(), -1);
  std::vector<int32_t> in_program;
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    const Tensor& tensor = trace.tensors[t];
    if (tensor.size_bytes == 0) continue;
    const auto first =
        std::upper_bound(ops.begin(), ops.end(), tensor.last_forward_use);
    if (first == ops.end() || *first >= tensor.first_backward_use) continue;
    if (!tensor.swap_forbidden) swap_col[t] = lp.Column(0, 1, 0);
    if (!tensor.recompute_forbidden) {
      drop_col[t] = lp.Column(0, 1, tensor.recompute_ns * kNs);
    }
    if (swap_col[t] >= 0 || drop_col[t] >= 0) in_program.push_back(t);
    if (swap_col[t] >= 0 && drop_col[t] >= 0) {
      lp.Row(-COIN_DBL_MAX, 1);
      lp.Add(swap_col[t], 1);
      lp.Add(drop_col[t], 1);
    }
  }
  // Each chosen op's rows hold at most two entries per tensor in the
  // program: refuse early rather than build what will not be solved.
  if (static_cast<int64_t>(in_program.size()) *
          static_cast<int64_t>(ops.size()) >
      4 * kLinearProgramMaxNonzeros) {
    return bound;
  }
  const double w_d =
      static_cast<double>(hardware.d2h_bytes_per_second) * kBytes / (1e9 * kNs);
  const double w_h =
      static_cast<double>(hardware.h2d_bytes_per_second) * kBytes / (1e9 * kNs);
  // R = sum r_t d_t appears in several rows.
  auto add_recompute = [&](double factor) {
    for (int32_t t : in_program) {
      if (drop_col[t] >= 0)
        lp.Add(drop_col[t], factor * trace.tensors[t].recompute_ns * kNs);
    }
  };
  int previous_stall = -1;
  for (size_t i = 0; i < ops.size(); ++i) {
    const int32_t o = ops[i];
    const bool backward = o >= trace.num_forward_ops;
    const int stall = lp.Column(0, COIN_DBL_MAX, i + 1 == ops.size() ? 1 : 0);
    const int late = lp.Column(0, COIN_DBL_MAX, 0);  // U_o
    if (previous_stall >= 0) {
      lp.Row(-COIN_DBL_MAX, 0);  // sigma non-decreasing
      lp.Add(previous_stall, 1);
      lp.Add(stall, -1);
    }
    previous_stall = stall;
    // Memory.
    lp.Row(static_cast<double>(excess[o]) * kBytes, COIN_DBL_MAX);
    for (int32_t t : in_program) {
      const Tensor& x = trace.tensors[t];
      if (!(x.last_forward_use < o && o < x.first_backward_use)) continue;
      const double size = static_cast<double>(x.size_bytes) * kBytes;
      if (swap_col[t] >= 0) lp.Add(swap_col[t], size);
      if (drop_col[t] >= 0) lp.Add(drop_col[t], size);
    }
    lp.Add(late, -1);
    // D2H.
    lp.Row(-COIN_DBL_MAX, w_d * static_cast<double>(start[o]) * kNs);
    for (int32_t t : in_program) {
      const Tensor& x = trace.tensors[t];
      if (swap_col[t] < 0 ||
          !(x.last_forward_use < o && o < x.first_backward_use)) {
        continue;
      }
      lp.Add(swap_col[t], static_cast<double>(x.size_bytes) * kBytes);
    }
    lp.Add(late, -1);
    lp.Add(stall, -w_d);
    if (backward) add_recompute(-w_d);
    // H2D.
    if (backward) {
      int64_t earliest = std::numeric_limits<int64_t>::max();
      for (int32_t t : in_program) {
        const Tensor& x = trace.tensors[t];
        if (swap_col[t] >= 0 && x.first_backward_use <= o)
          earliest = std::min(earliest, start[x.last_forward_use + 1]);
      }
      if (earliest != std::numeric_limits<int64_t>::max()) {
        lp.Row(-COIN_DBL_MAX,
               w_h * static_cast<double>(start[o] - earliest) * kNs);
        for (int32_t t : in_program) {
          const Tensor& x = trace.tensors[t];
          if (swap_col[t] >= 0 && x.first_backward_use <= o)
            lp.Add(swap_col[t], static_cast<double>(x.size_bytes) * kBytes);
        }
        lp.Add(stall, -w_h);
        add_recompute(-w_h);
      }
    }
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
