#include "planner/allocator_budget.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "planner/lower_bound.h"
#include "simulator/event_model.h"
#include "simulator/schedule.h"
#include "simulator/speed_scaling.h"

namespace slackswap {

const std::vector<SpeedScaling>& ReservedCheckScalings() {
  static const std::vector<SpeedScaling>* scalings = [] {
    auto* out = new std::vector<SpeedScaling>(RobustnessScalings());
    out->push_back({1.0, std::numeric_limits<double>::infinity()});
    return out;
  }();
  return *scalings;
}

SimulationOptions AllocatorReplayOptions(int64_t budget_bytes,
                                         const Physics& physics,
                                         bool per_layer_barriers) {
  SimulationOptions options;
  options.budget_bytes = budget_bytes;
  options.per_layer_barriers = per_layer_barriers;
  options.physics = physics;
  options.physics.budget_reserved =
      physics.budget_reserved && physics.allocator != AllocatorKind::kNone;
  return options;
}

namespace {

// The plan's replays under the reserved budget at ReservedCheckScalings():
// `failed` says where the first that does not complete fails (empty when
// all do); returns the most any failing one reserves at the resident
// budget, at least `reserved`.
int64_t CheckOtherSpeeds(const Trace& trace, const Hardware& hardware,
                         int64_t budget_bytes, int64_t resident_budget,
                         const Physics& physics, const PlanningResult& result,
                         int64_t reserved, std::string& failed) {
  const Schedule schedule = DeriveSchedule(trace, result.plan);
  const SimulationOptions options =
      AllocatorReplayOptions(budget_bytes, physics, result.per_layer_barriers);
  SimulationOptions observed = options;
  observed.physics.budget_reserved = false;
  observed.budget_bytes = resident_budget;
  int64_t most_reserved = reserved;
  for (const SpeedScaling& s : ReservedCheckScalings()) {
    const absl::StatusOr<SimulationResult> scaled =
        ReplayScaled(trace, hardware, result.plan, schedule, options, s);
    if (!scaled.ok() || scaled->feasible) continue;
    if (failed.empty()) {
      failed = absl::StrFormat("with kernels x%g and the link x%g: %s",
                               s.kernel_time_factor, s.link_speed_factor,
                               scaled->infeasibility.reason);
    }
    const absl::StatusOr<SimulationResult> at_resident =
        ReplayScaled(trace, hardware, result.plan, schedule, observed, s);
    if (at_resident.ok()) {
      most_reserved = std::max(most_reserved, at_resident->peak_reserved_bytes);
    }
  }
  return most_reserved;
}

}  // namespace

absl::StatusOr<PlanningResult> PlanUnderAllocator(const Trace& trace,
                                                  const Hardware& hardware,
                                                  int64_t budget_bytes,
                                                  const Physics& physics,
                                                  const BudgetedPlanner& plan) {
  if (physics.allocator == AllocatorKind::kNone) return plan(budget_bytes);
  // The plan's replay under the allocator (one of an invalid plan keeps the
  // policy's answer: policies make valid plans).
  const auto replay = [&](PlanningResult& r, int64_t budget, bool reserved) {
    Physics model = physics;
    model.budget_reserved = reserved;
    absl::StatusOr<SimulationResult> replayed =
        Simulate(trace, hardware, r.plan,
                 AllocatorReplayOptions(budget, model, r.per_layer_barriers));
    if (replayed.ok()) r.replay = *std::move(replayed);
    return replayed.ok();
  };
  int64_t resident_budget = budget_bytes;
  // No round plans below the proven floor (no plan fits): the last, at it.
  const int64_t floor = ComputeProvenFloor(trace).bytes;
  const auto shrink = [&](int64_t by) {
    const int64_t next = resident_budget - by;
    if (next >= floor) return next;
    return resident_budget > floor ? floor : int64_t{-1};
  };
  PlanningResult result;
  // The first plan that completed under the reserved budget at the profiled
  // speeds but not at another: the answer if no later round does better
  // (its metrics.scaled show where it fails).
  std::optional<PlanningResult> fallback;
  // Once a plan fits (at every speed checked), the fastest that does; the
  // rounds then bisect between the largest resident budget whose plan fits
  // and the smallest above it whose plan does not: a plan for a larger
  // resident budget is usually faster.
  std::optional<PlanningResult> best;
  int64_t fits = -1;
  int64_t fails = -1;
  int refinements = 0;
  // The next resident budget: less by `overshoot` until a plan fits, then
  // halfway between `fits` and `fails`; -1 when there is none.
  const auto next_budget = [&](int64_t overshoot) -> int64_t {
    if (!best.has_value()) {
      return shrink(std::max(overshoot, resident_budget / 64 + 1));
    }
    if (fails < 0 || refinements >= kReservedRefinements ||
        fails - fits <= std::max<int64_t>(budget_bytes / 256, 1)) {
      return -1;
    }
    ++refinements;
    return fits + (fails - fits) / 2;
  };
  for (int round = 0; round < kReservedBudgetRounds; ++round) {
    SLACKSWAP_ASSIGN_OR_RETURN(result, plan(resident_budget));
    result.planned_budget_bytes = resident_budget;
    // (A proof that no plan fits less, the exact stage's, is not one here.)
    result.proven_infeasible &= resident_budget == budget_bytes;
    // Under a resident budget the allocator only observes: the same replay,
    // with the reserved peak.
    if (!replay(result, resident_budget, false) || !physics.budget_reserved) {
      return best.has_value() ? *std::move(best) : result;
    }
    const int64_t reserved = result.replay.peak_reserved_bytes;
    const bool planned = result.feasible;
    const std::string policy_reason = std::move(result.reason);
    replay(result, budget_bytes, true);
    result.feasible = result.replay.feasible;
    result.reason.clear();
    if (resident_budget != budget_bytes) {
      result.lower_bound = ComputeLowerBound(trace, hardware, budget_bytes);
    }
    int64_t overshoot = reserved - budget_bytes;
    if (result.feasible) {
      std::string failed;
      const int64_t most_reserved =
          CheckOtherSpeeds(trace, hardware, budget_bytes, resident_budget,
                           physics, result, reserved, failed);
      if (failed.empty()) {
        if (resident_budget == budget_bytes) return result;
        if (!best.has_value() ||
            result.replay.iteration_ns < best->replay.iteration_ns) {
          best = result;
        }
        fits = resident_budget;
        resident_budget = next_budget(0);
        if (resident_budget < 0) return *std::move(best);
        continue;
      }
      if (!fallback.has_value()) fallback = result;
      result.feasible = false;
      result.reason = absl::StrCat("the plan for ", resident_budget,
                                   " resident bytes completes under ",
                                   "the reserved budget of ", budget_bytes,
                                   " bytes but not at another speed: ", failed);
      overshoot = most_reserved - budget_bytes;
    } else if (!planned) {
      if (best.has_value()) return *std::move(best);
      if (fallback.has_value()) return *std::move(fallback);
      result.reason = absl::StrCat("no plan for ", resident_budget,
                                   " resident bytes: ", policy_reason);
      return result;
    } else {
      result.reason = absl::StrCat(
          "the plan for ", resident_budget, " resident bytes reserves ",
          reserved, ", and under the reserved budget of ", budget_bytes,
          " bytes: ", result.replay.infeasibility.reason);
    }
    // Plan again for less, by what the plan reserved over the budget (at
    // least 1/64 of the resident budget, so that the rounds get somewhere),
    // or, once a plan fits, halfway up to this one.
    fails = resident_budget;
    resident_budget = next_budget(overshoot);
    if (resident_budget <= 0) break;
  }
  if (best.has_value()) return *std::move(best);
  if (fallback.has_value()) return *std::move(fallback);
  result.reason =
      absl::StrCat("no plan within the reserved budget after ",
                   kReservedBudgetRounds, " tries; the last: ", result.reason);
  return result;
}

}  // namespace slackswap
