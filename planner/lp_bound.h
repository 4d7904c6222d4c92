// File: lp_bound.h
//
// A lower bound on the iteration time of every plan from a linear program,
// solved with COIN-OR Clp. Where the fast bound (lower_bound.h) lets every op
// choose its own swaps and drops, the program makes every op share one
// fractional decision per tensor, pays each rebuild once, and lets the stall
// grow only forward in time:
//
//   variables  s_t, d_t in [0, 1]   the fractions of tensor t swapped, dropped
//              s_t + d_t <= 1
//              sigma_o >= 0          the stall before op o, non-decreasing in o
//              U_o >= 0              swapped bytes removable at o whose
//                                    offload has not ended by o's start
//   minimize   sum_t r_t d_t + sigma_last        (r_t: t's recompute time)
//   for each of the most constrained ops o (its all-keep bytes over budget),
//   with W(o) the tensors removable at o (last forward use < o < first
//   backward use), R = sum_t r_t d_t and t0(o) o's start without stalls:
//     memory  sum_{W(o)} size_t (s_t + d_t) - U_o >= live(o) - budget
//     D2H     sum_{W(o)} size_t s_t - U_o <= w_d (t0(o) + sigma_o [+ R])
//     H2D     sum_{fbu(t) <= o} size_t s_t <= w_h (t0(o) + sigma_o + R - T(o))
//   (R in the D2H row for backward ops only; T(o) the earliest time after
//   any such tensor's last forward use). docs/planner.md proves each row.
//
// The bound is ideal + the program's optimum, rounded down with a margin for
// the solver's tolerances. It never proves infeasibility (the fast bound's
// exact test does); when Clp does not report an optimum, within
// kLinearProgramMaxIterations, or the program has more than
// kLinearProgramMaxNonzeros nonzeros, no bound is given.
#ifndef SLACKSWAP_PLANNER_LP_BOUND_H_
#define SLACKSWAP_PLANNER_LP_BOUND_H_

#include <cstdint>

#include "simulator/hardware.h"
#include "simulator/trace.h"

namespace slackswap {

struct LinearProgramBound {
  bool solved = false;       // false: Clp gave no optimum; no bound
  int64_t iteration_ns = 0;  // ideal_ns at least
  int32_t rows = 0;
  int32_t columns = 0;
};

// Ops taken into the program: the most constrained, at most this many.
inline constexpr int32_t kLinearProgramOps = 32;
// Past these sizes no linear-program bound is given (the fast bound stands):
// a program of a million nonzeros takes Clp seconds and about 100 MB.
// GPT-2 XL's has about 250,000 and solves in a few thousand iterations.
inline constexpr int64_t kLinearProgramMaxNonzeros = 1 << 20;
inline constexpr int kLinearProgramMaxIterations = 50'000;

// O(ops x tensors) to build; the solve is Clp's dual simplex.
LinearProgramBound ComputeLinearProgramBound(const Trace& trace,
                                             const Hardware& hardware,
                                             int64_t budget_bytes);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_LP_BOUND_H_
