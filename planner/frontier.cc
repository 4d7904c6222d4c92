#include "planner/frontier.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "planner/lower_bound.h"
#include "simulator/event_model.h"

namespace slackswap {

absl::StatusOr<int64_t> SmallestPlannedBudget(
    int64_t lo, int64_t hi, int64_t precision,
    const std::function<absl::StatusOr<bool>(int64_t)>& planned) {
  precision = std::max<int64_t>(1, precision);
  if (lo >= hi) return hi;
  SLACKSWAP_ASSIGN_OR_RETURN(bool at_lo, planned(lo));
  if (at_lo) return lo;
  while (hi - lo > precision) {
    const int64_t mid = lo + (hi - lo) / 2;
    SLACKSWAP_ASSIGN_OR_RETURN(bool at_mid, planned(mid));
    if (at_mid) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return hi;
}

namespace {

FrontierPoint PointOf(const PlanningResult& r, int64_t budget) {
  FrontierPoint p;
  p.budget_bytes = budget;
  p.planned = r.feasible;
  if (r.feasible) {
    p.throughput_ratio = r.replay.throughput_ratio;
    p.iteration_ns = r.replay.iteration_ns;
    p.swapped_bytes = r.replay.swapped_bytes;
    p.recomputed_bytes = r.replay.recomputed_bytes;
  }
  return p;
}

}  // namespace

absl::StatusOr<FrontierCurve> ComputeFrontier(
    const Trace& trace, const std::vector<double>& fractions,
    double target_throughput_ratio,
    const std::function<absl::StatusOr<PlanningResult>(int64_t)>& plan) {
  const int64_t peak = AllKeepPeakBytes(trace);
  FrontierCurve frontier;
  frontier.all_keep_peak_bytes = peak;
  auto plan_at = [&](int64_t budget) -> absl::StatusOr<FrontierPoint> {
    SLACKSWAP_ASSIGN_OR_RETURN(PlanningResult r, plan(budget));
    return PointOf(r, budget);
  };
  auto reaches = [&](const FrontierPoint& p) {
    return p.planned && p.throughput_ratio >= target_throughput_ratio;
  };
  // The curve starts at the floor: budgets below the proven floor have no
  // plan, and the first point is the smallest budget SlackSwap meets.
  const int64_t floor = ComputeProvenFloor(trace).bytes;
  frontier.proven_floor_bytes = floor;
  std::vector<int64_t> budgets;
  for (double f : fractions) {
    const int64_t b =
        static_cast<int64_t>(std::floor(f * static_cast<double>(peak)));
    if (b >= floor) budgets.push_back(b);
  }
  if (floor <= peak) {
    SLACKSWAP_ASSIGN_OR_RETURN(
        const int64_t first,
        SmallestPlannedBudget(floor, peak, peak / 1000,
                              [&](int64_t budget) -> absl::StatusOr<bool> {
                                SLACKSWAP_ASSIGN_OR_RETURN(FrontierPoint p,
                                                           plan_at(budget));
                                return p.planned;
                              }));
    budgets.push_back(first);
  }
  std::sort(budgets.begin(), budgets.end());
  budgets.erase(std::unique(budgets.begin(), budgets.end()), budgets.end());
  for (int64_t b : budgets) {
    SLACKSWAP_ASSIGN_OR_RETURN(FrontierPoint p, plan_at(b));
    frontier.points.push_back(p);
  }
  if (target_throughput_ratio <= 0) return frontier;
  // The smallest budget that reaches the target: bisect between the largest
  // curve point below it that does not and the smallest that does (or the
  // peak, where the all-keep plan reaches any target).
  int64_t hi = peak, lo = 0;
  FrontierPoint best;
  for (const FrontierPoint& p : frontier.points) {
    if (reaches(p)) {
      hi = p.budget_bytes;
      best = p;
      break;
    }
    lo = p.budget_bytes;
  }
  if (best.budget_bytes == 0) {
    SLACKSWAP_ASSIGN_OR_RETURN(best, plan_at(peak));
  }
  if (!reaches(best)) return frontier;
  const int64_t precision = std::max<int64_t>(1, peak / 1000);
  while (hi - lo > precision) {
    const int64_t mid = lo + (hi - lo) / 2;
    SLACKSWAP_ASSIGN_OR_RETURN(FrontierPoint p, plan_at(mid));
    if (reaches(p)) {
      hi = mid;
      best = p;
    } else {
      lo = mid;
    }
  }
  frontier.target_reached = true;
  frontier.smallest_budget = best;
  return frontier;
}

absl::Status ExplainInfeasible(const Trace& trace, const Hardware& hardware,
                               const PlannerOptions& options,
                               PlanningResult& result) {
  const ProvenFloor floor = ComputeProvenFloor(trace);
  result.proven_floor_bytes = floor.bytes;
  const int64_t peak = AllKeepPeakBytes(trace);
  PlannerOptions quiet = options;
  quiet.linear_program_bound = false;
  // About 15 plans: each with a short anytime search.
  quiet.search_time_ms = std::min(quiet.search_time_ms, kExplainSearchMs);
  SLACKSWAP_ASSIGN_OR_RETURN(
      const int64_t smallest,
      SmallestPlannedBudget(
          std::max(floor.bytes, result.replay.budget_bytes + 1),
          std::max(peak, floor.bytes), peak / 10000,
          [&](int64_t budget) -> absl::StatusOr<bool> {
            SLACKSWAP_ASSIGN_OR_RETURN(
                PlanningResult r,
                PlanSlackSwap(trace, hardware, budget, quiet));
            return r.feasible;
          }));
  result.smallest_planned_budget_bytes = smallest;
  if (result.Outcome() == PlanOutcome::kNoPlanFound) {
    absl::StrAppend(&result.reason,
                    "; not proven infeasible: the proven floor is ",
                    floor.bytes, " bytes (op ", floor.op,
                    " must hold that much), below this budget, so a plan may "
                    "exist; SlackSwap plans from ",
                    smallest, " bytes");
    return absl::OkStatus();
  }
  if (result.replay.budget_bytes >= floor.bytes) {
    // Proven by an exhaustive search (the exact stage), above the floor.
    absl::StrAppend(&result.reason, "; SlackSwap plans from ", smallest,
                    " bytes (the proven floor is ", floor.bytes, " bytes)");
    return absl::OkStatus();
  }
  absl::StrAppend(&result.reason, "; no plan fits below ", floor.bytes,
                  " bytes (op ", floor.op, " must hold that much), and ",
                  "SlackSwap plans from ", smallest, " bytes");
  return absl::OkStatus();
}

}  // namespace slackswap
