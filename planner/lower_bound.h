// File: lower_bound.h
//
// A provable lower bound on the iteration time of any plan for a trace,
// hardware and memory budget, and a proof of infeasibility when no plan can
// fit. The derivation is in docs/planner.md; in short, at the start of an op
// o the bytes that the all-keep run holds beyond the budget must be gone:
// offloaded (the D2H link can have moved at most W * t bytes by time t) or
// dropped for recomputation (at the least cost per byte, a fractional
// knapsack, or whole tensors where few are removable). Stalls and rebuilds
// before o give the link more time but add to the iteration; the bound
// minimizes over them and maximizes over o.
#ifndef SLACKSWAP_PLANNER_LOWER_BOUND_H_
#define SLACKSWAP_PLANNER_LOWER_BOUND_H_

#include <cstdint>
#include <string>

#include "simulator/hardware.h"
#include "simulator/trace.h"

namespace slackswap {

// Which computation gave a bound.
enum class BoundSource : uint8_t {
  kFast,           // the per-op knapsack below
  kLinearProgram,  // lp_bound.h
};

struct LowerBound {
  // False when no plan can fit the budget: `reason` says where and why.
  bool feasible = true;
  BoundSource source = BoundSource::kFast;
  std::string reason;
  // Lower bound on the iteration time of every plan (ideal_ns at least).
  int64_t iteration_ns = 0;
  // The forward op whose constraint gives the bound (-1: the ideal time).
  int32_t binding_op = -1;
};

// The least budget ComputeLowerBound does not prove infeasible: the most
// bytes some op must hold at its start in every plan, and that op. Exact
// (integers); O(ops + tensors).
struct ProvenFloor {
  int64_t bytes = 0;
  int32_t op = -1;
};
ProvenFloor ComputeProvenFloor(const Trace& trace);

// Rebuilding `a` costs less time per byte than rebuilding `b`:
// a.recompute_ns / a.size_bytes < b.recompute_ns / b.size_bytes, exactly.
bool CheaperToRebuildPerByte(const Tensor& a, const Tensor& b);

// O(ops + tensors + uses) plus O(k log k) for each of the (at most 16) most
// constrained ops, where k is the number of tensors live there; where k <= 64,
// a branch and bound of at most 16,384 nodes of O(k) each.
// Polls the thread's stop function (base/stop.h) before each op's knapsack:
// once it says stop, the bound of the ops so far (weaker, still a bound).
LowerBound ComputeLowerBound(const Trace& trace, const Hardware& hardware,
                             int64_t budget_bytes);

// The larger of that bound and the linear program's (lp_bound.h), saying
// which. Infeasibility is the fast bound's exact verdict either way.
LowerBound ComputeLowerBound(const Trace& trace, const Hardware& hardware,
                             int64_t budget_bytes, bool linear_program);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_LOWER_BOUND_H_
