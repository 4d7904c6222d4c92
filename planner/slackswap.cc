#include "planner/slackswap.h"

#include <algorithm>
#include <iterator>
#include <limits>

#include "base/status_macros.h"
#include "planner/anytime.h"
#include "planner/issue_points.h"
#include "planner/link_budget_pass.h"
#include "planner/plan_draft.h"
#include "planner/polish.h"
#include "planner/recompute_pass.h"
#include "planner/repair.h"
#include "simulator/schedule.h"

namespace slackswap {

int64_t PolishReplays(const Trace& trace, const PlannerOptions& options) {
  if (options.polish_work <= 0) return 0;
  const int64_t elements =
      int64_t{trace.num_ops()} + trace.num_tensors() +
      static_cast<int64_t>(trace.uses.items.size()) +
      static_cast<int64_t>(trace.recompute_inputs.items.size());
  return std::clamp<int64_t>(
      options.polish_work / std::max<int64_t>(1, elements), 16, 4096);
}

namespace {

// SlackSwap without the anytime search: the plan of the passes, repair and
// the improvement step.
int64_t BaseReplays(const Trace& trace, const PlannerOptions& options) {
  return options.max_repair_iterations + 2 + 3 * PolishReplays(trace, options);
}

// The budgets below `budget_bytes` whose plans seed the anytime search: 3%,
// 6% and 10% of the all-keep peak less.
constexpr double kSmallerBudgets[] = {0.03, 0.06, 0.10};
// Without a plan at the budget, the larger budgets whose plans seed it too.
constexpr double kLargerBudgets[] = {0.05, 0.15};

}  // namespace

int64_t MaxSlackSwapReplays(const Trace& trace, const PlannerOptions& options) {
  const int64_t search = AnytimeReplays(trace, options);
  const int64_t base = BaseReplays(trace, options);
  return base +
         (search > 0
              ? search + static_cast<int64_t>(std::size(kSmallerBudgets) +
                                              std::size(kLargerBudgets)) *
                             base
              : 0);
}

absl::StatusOr<PlanningResult> PlanSlackSwap(const Trace& trace,
                                             const Hardware& hardware,
                                             int64_t budget_bytes,
                                             const PlannerOptions& options) {
  SLACKSWAP_RETURN_IF_ERROR(CheckTimeRange(trace, hardware));
  SLACKSWAP_RETURN_IF_ERROR(CheckPhysics(trace, hardware));
  StopPoll stop(options.should_stop, 16);
  // On a shared uplink the passes budget the link each rank gets while all
  // copy at once (exact for ranks in lockstep); the replays apply the node
  // physics as they are. The bound may use the share only when no skew
  // lets a rank find the uplink to itself.
  const Hardware link = LockstepShare(hardware);
  PlanningResult result;
  result.per_layer_barriers = options.per_layer_barriers;
  result.lower_bound =
      ComputeLowerBound(trace, hardware.rank_skew_ns == 0 ? link : hardware,
                        budget_bytes, options.linear_program_bound);
  SimulationOptions sim;
  sim.budget_bytes = budget_bytes;
  sim.per_layer_barriers = options.per_layer_barriers;
  sim.prefetch_admission = options.prefetch_admission;

  const IdealTimeline timeline(trace);
  PlanDraft draft(trace);
  auto replay = [&](const Plan& plan, bool timeline_wanted) {
    SimulationOptions o = sim;
    o.record_timeline = timeline_wanted;
    return SimulateSchedule(trace, hardware, plan, DeriveSchedule(trace, plan),
                            o);
  };

  if (!result.lower_bound.feasible) {
    result.feasible = false;
    result.reason = result.lower_bound.reason;
    result.plan = draft.plan();
    result.replay = replay(result.plan, false);
    return result;
  }

  // Swapped tensors' forward copies must be freed by the time the all-keep
  // peak needs the room: the excess is what the link is asked to move.
  const std::vector<int32_t> run_start = BlockRunStarts(trace);
  std::vector<int64_t> lead_ns(trace.tensors.size(), 0);
  std::vector<uint8_t> issue_at_need(trace.tensors.size(), 0);
  const std::vector<int32_t> swaps =
      SelectSwaps(trace, link, timeline, budget_bytes, options);
  result.stats.swaps_admitted = static_cast<int32_t>(swaps.size());
  for (int32_t t : swaps)
    draft.SetSwap(t, trace.tensors[t].last_forward_use,
                  trace.first_backward_op());
  PlaceSwaps(trace, link, timeline, run_start, options.per_layer_barriers,
             lead_ns, issue_at_need, draft);

  if (stop.StopNow()) return PlanningStopped();
  RecomputePass recompute(trace, draft, &stop);
  recompute.Run(budget_bytes, result.stats);
  if (stop.stopped()) return PlanningStopped();
  PlaceSwaps(trace, link, timeline, run_start, options.per_layer_barriers,
             lead_ns, issue_at_need, draft);

  // Validation and repair.
  std::vector<int32_t> admitted = swaps;  // still-swapped, in admission order
  bool have_best = false;
  for (int iteration = 0; iteration < options.max_repair_iterations;
       ++iteration) {
    if (stop.StopNow()) return PlanningStopped();
    const SimulationResult r = replay(draft.plan(), true);
    if (r.feasible &&
        (!have_best || r.iteration_ns < result.replay.iteration_ns)) {
      have_best = true;
      result.plan = draft.plan();
      result.replay = r;
      result.replay.timeline.clear();
    }
    int changes = 0;
    if (!r.feasible) {
      // Memory that does not fit where the replay gave up: recompute there.
      const int32_t op = r.infeasibility.op;
      const int64_t short_by = r.infeasibility.bytes_needed +
                               r.infeasibility.bytes_resident - budget_bytes;
      if (recompute.RecomputeAt(op, short_by, result.stats)) {
        ++changes;
      } else {
        // Nothing left to recompute there: prefetches that arrived early
        // hold the memory. Issue them at their need instead.
        for (int32_t t = 0; t < trace.num_tensors(); ++t) {
          if (draft.decision(t) == Decision::kSwap && !issue_at_need[t] &&
              draft.need(t) > op && draft.plan().prefetch_issue_op[t] <= op) {
            issue_at_need[t] = 1;
            ++changes;
          }
        }
      }
    } else if (r.last_offload_lag_ns > 0 && r.memory_wait_ns > 0) {
      // Offloads lag past the forward pass and the compute stream waited for
      // the memory they hold: drop the latest admitted swap.
      while (!admitted.empty() &&
             draft.decision(admitted.back()) != Decision::kSwap) {
        admitted.pop_back();
      }
      if (!admitted.empty()) {
        const int32_t t = admitted.back();
        admitted.pop_back();
        Unswap(trace, t, draft);
        ++changes;
      }
    } else if (r.prefetch_wait_ns > 0) {
      // A prefetch the admission rule held back for the memory of a step
      // before its need: free memory there (what a memory wait gets);
      // otherwise issue late prefetches earlier.
      if (r.held_prefetch_op >= 0 &&
          recompute.RecomputeAt(r.held_prefetch_op,
                                r.held_prefetch_excess_bytes, result.stats)) {
        ++changes;
      } else {
        changes += RepairLatePrefetches(trace, r, lead_ns, draft);
      }
    } else if (r.memory_wait_ns > 0) {
      // A memory wait with offloads on time: the draft underestimated memory
      // somewhere. Recompute at the peak of the draft.
      if (recompute.RecomputeAt(draft.PeakOp(), 1, result.stats)) ++changes;
    }
    if (changes == 0) break;
    ++result.stats.repair_iterations;
    result.stats.repairs += changes;
    recompute.Run(budget_bytes, result.stats);
    if (stop.stopped()) return PlanningStopped();
    PlaceSwaps(trace, link, timeline, run_start, options.per_layer_barriers,
               lead_ns, issue_at_need, draft);
  }
  result.stats.draft_lifetime_updates = draft.lifetime_updates();

  // Improvement step: a bounded local search, judged by replays, from the
  // best plan (or, where repair found none, from the last attempt).
  if (options.polish_work > 0) {
    PolishOptions polish;
    polish.max_replays = PolishReplays(trace, options);
    polish.allow_swap = options.link_budget_pass;
    polish.per_layer_barriers = options.per_layer_barriers;
    polish.stop = &stop;
    polish.prefetch_admission = options.prefetch_admission;
    // Starting points: the passes' plan, and where the budget allows a few
    // more searches (small traces), the all-keep plan and the plan that
    // swaps everything it may at its need: a local search stays in its
    // starting point's basin.
    std::vector<Plan> starts = {have_best ? result.plan : draft.plan()};
    if (polish.max_replays >= 512) {
      starts.push_back(Plan::AllKeep(trace));
      if (options.link_budget_pass) {
        Plan swap_all = Plan::AllKeep(trace);
        int64_t swapped = 0;
        const int64_t cap = hardware.host_pinned_memory_bytes > 0
                                ? hardware.host_pinned_memory_bytes
                                : std::numeric_limits<int64_t>::max();
        for (int32_t t = 0; t < trace.num_tensors(); ++t) {
          const Tensor& tensor = trace.tensors[t];
          if (tensor.swap_forbidden || tensor.size_bytes == 0 ||
              swapped + tensor.size_bytes > cap) {
            continue;
          }
          swap_all.decisions[t] = Decision::kSwap;
          swapped += tensor.size_bytes;
        }
        const std::vector<int32_t> need =
            DeriveNeeds(trace, swap_all.decisions);
        for (int32_t t = 0; t < trace.num_tensors(); ++t) {
          if (swap_all.decisions[t] != Decision::kSwap) continue;
          swap_all.prefetch_issue_op[t] =
              options.per_layer_barriers ? run_start[need[t]] : need[t];
        }
        starts.push_back(std::move(swap_all));
      }
    }
    for (size_t i = 0; i < starts.size(); ++i) {
      Plan plan = std::move(starts[i]);
      SimulationResult polished =
          i == 0 && have_best ? result.replay : replay(plan, false);
      const PolishResult p =
          Polish(trace, hardware, budget_bytes, polish, plan, polished);
      if (stop.stopped()) return PlanningStopped();
      result.stats.polish_replays += static_cast<int32_t>(p.replays);
      result.stats.polish_changes += p.changes;
      if (polished.feasible &&
          (!have_best || polished.iteration_ns < result.replay.iteration_ns)) {
        have_best = true;
        result.plan = std::move(plan);
        result.replay = std::move(polished);
      }
    }
  }
  // The anytime search (anytime.h), where the plan is missing or its gap to
  // the bound is above the target. Not for the ablations (their options
  // turn it off): they measure the passes.
  const int64_t search_replays = AnytimeReplays(trace, options);
  const int64_t target_ns = static_cast<int64_t>(
      static_cast<double>(result.lower_bound.iteration_ns) *
      (1 + std::max(options.gap_target, 0.0)));
  if (search_replays > 0 && options.link_budget_pass &&
      (!have_best || result.replay.iteration_ns > target_ns)) {
    Plan plan = have_best ? result.plan : draft.plan();
    SimulationResult searched = have_best ? result.replay : replay(plan, false);
    AnytimeOptions search;
    search.target_ns = target_ns;
    search.per_layer_barriers = options.per_layer_barriers;
    search.stop = &stop;
    // SlackSwap's own plans for slightly smaller budgets, which fit this one
    // too: the answer here should be no slower than theirs.
    // Each start is a plan of the passes, which the search's limit pays for
    // (in replays, as the passes made them here): while it leaves at least
    // half of the limit to the search itself.
    PlannerOptions base = options;
    base.search_time_ms = 0;
    const int64_t base_replays =
        result.stats.repair_iterations + 2 + result.stats.polish_replays;
    int64_t left = search_replays;
    const auto afford = [&] {
      if (left - base_replays < search_replays / 2) return false;
      left -= base_replays;
      return true;
    };
    const int64_t peak = AllKeepPeakBytes(trace);
    const int64_t floor = ComputeProvenFloor(trace).bytes;
    for (double less : kSmallerBudgets) {
      const int64_t smaller =
          budget_bytes - static_cast<int64_t>(less * static_cast<double>(peak));
      if (smaller < floor || !afford()) break;
      SLACKSWAP_ASSIGN_OR_RETURN(const PlanningResult r,
                                 PlanSlackSwap(trace, hardware, smaller, base));
      if (r.feasible) search.extra_starts.push_back(r.plan);
    }
    // Without a plan here, also plans for larger budgets: too big for this
    // one, but the searches start near a feasible plan from them.
    for (double more : kLargerBudgets) {
      if (have_best) break;
      const int64_t larger =
          budget_bytes + static_cast<int64_t>(more * static_cast<double>(peak));
      if (larger >= peak || !afford()) break;
      SLACKSWAP_ASSIGN_OR_RETURN(const PlanningResult r,
                                 PlanSlackSwap(trace, hardware, larger, base));
      if (r.feasible) search.extra_starts.push_back(r.plan);
    }
    if (stop.StopNow()) return PlanningStopped();
    search.max_replays = left;
    const AnytimeResult found =
        SearchAnytime(trace, hardware, budget_bytes, search, plan, searched);
    if (stop.stopped()) return PlanningStopped();
    result.stats.search_replays = found.replays;
    if (searched.feasible &&
        (!have_best || searched.iteration_ns < result.replay.iteration_ns)) {
      have_best = true;
      result.plan = std::move(plan);
      result.replay = std::move(searched);
      result.stats.search_improved = true;
    }
  }
  if (!have_best) {
    result.feasible = false;
    result.plan = draft.plan();
    result.replay = replay(result.plan, false);
    result.reason = result.replay.feasible ? "no plan within the repair budget"
                                           : result.replay.infeasibility.reason;
  }
  return result;
}

}  // namespace slackswap
