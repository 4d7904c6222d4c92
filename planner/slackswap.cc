#include "planner/slackswap.h"

#include <algorithm>
#include <iterator>
#include <limits>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/workers.h"
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

// The budgets below `budget_bytes` whose plans seed the anytime search: 3%
// of the all-keep peak less. (With 6% and 10% as well, the held-out seed
// sets' losses summed 12% more at the same limit: docs/planner.md.)
constexpr double kSmallerBudgets[] = {0.03};
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

namespace {

// One SlackSwap plan, phase by phase (docs/planner.md): the two passes on a
// plan draft, validation and repair in the event model, the improvement
// step from a few starting points, and the anytime search. Each phase keeps
// the fastest feasible plan in `result_`; a stopped phase returns
// PlanningStopped().
class SlackSwapRun {
 public:
  SlackSwapRun(const Trace& trace, const Hardware& hardware,
               int64_t budget_bytes, const PlannerOptions& options)
      : trace_(trace),
        hardware_(hardware),
        budget_(budget_bytes),
        options_(options),
        stop_(options.should_stop, 16),
        // On a shared uplink the passes budget the link each rank gets while
        // all copy at once (exact for ranks in lockstep); the replays apply
        // the node physics as they are.
        link_(LockstepShare(hardware)),
        timeline_(trace),
        draft_(trace),
        run_start_(BlockRunStarts(trace)),
        lead_ns_(trace.tensors.size(), 0),
        issue_at_need_(trace.tensors.size(), 0),
        recompute_(trace, draft_, &stop_) {
    sim_.budget_bytes = budget_bytes;
    sim_.per_layer_barriers = options.per_layer_barriers;
    sim_.prefetch_admission = options.prefetch_admission;
    sim_.physics = options.physics;
  }

  absl::StatusOr<PlanningResult> Run() {
    result_.per_layer_barriers = options_.per_layer_barriers;
    // The bound may use the lockstep share only when no skew lets a rank
    // find the uplink to itself.
    result_.lower_bound = ComputeLowerBound(
        trace_, options_.physics.rank_skew_ns == 0 ? link_ : hardware_, budget_,
        options_.linear_program_bound);
    if (!result_.lower_bound.feasible) {
      result_.feasible = false;
      result_.reason = result_.lower_bound.reason;
      result_.plan = draft_.plan();
      result_.replay = Replay(result_.plan, false);
      return result_;
    }
    SLACKSWAP_RETURN_IF_ERROR(Passes());
    SLACKSWAP_RETURN_IF_ERROR(Repair());
    result_.stats.draft_lifetime_updates = draft_.lifetime_updates();
    if (options_.polish_work > 0) SLACKSWAP_RETURN_IF_ERROR(Improve());
    SLACKSWAP_RETURN_IF_ERROR(Search());
    if (!have_best_) {
      result_.feasible = false;
      result_.plan = draft_.plan();
      result_.replay = Replay(result_.plan, false);
      result_.reason =
          result_.proven_infeasible
              ? absl::StrCat("no plan fits the budget of ", budget_,
                             " bytes: the anytime search's exact stage ",
                             "searched every decision and issue point and ",
                             "found none")
          : result_.replay.feasible ? "no plan within the repair budget"
                                    : result_.replay.infeasibility.reason;
    }
    // The answer's replay as Simulate gives it: the searches' resume points
    // (a candidate's replay may have started from another's) are theirs.
    result_.replay.resume_points = {};
    result_.replay.resumed_events = 0;
    return result_;
  }

 private:
  SimulationResult Replay(const Plan& plan, bool timeline_wanted) const {
    SimulationOptions o = sim_;
    o.record_timeline = timeline_wanted;
    return SimulateSchedule(trace_, hardware_, plan,
                            DeriveSchedule(trace_, plan), o);
  }

  // Keeps `plan` if it is feasible and faster than the best so far.
  bool Offer(Plan& plan, SimulationResult& replayed) {
    if (!replayed.feasible ||
        (have_best_ && replayed.iteration_ns >= result_.replay.iteration_ns)) {
      return false;
    }
    have_best_ = true;
    result_.plan = std::move(plan);
    result_.replay = std::move(replayed);
    return true;
  }

  void PlaceSwaps() {
    slackswap::PlaceSwaps(trace_, link_, timeline_, run_start_,
                          options_.per_layer_barriers, lead_ns_, issue_at_need_,
                          draft_);
  }

  // Pass 1 spends the link budget (swapped tensors' forward copies must be
  // freed by the time the all-keep peak needs the room: the excess is what
  // the link is asked to move); pass 2 recomputes the cheapest bytes.
  absl::Status Passes() {
    // (The lower bound may have stopped part way.)
    if (stop_.StopNow()) return PlanningStopped();
    admitted_ = SelectSwaps(trace_, link_, timeline_, budget_, options_);
    result_.stats.swaps_admitted = static_cast<int32_t>(admitted_.size());
    for (int32_t t : admitted_) {
      draft_.SetSwap(t, trace_.tensors[t].last_forward_use,
                     trace_.first_backward_op());
    }
    PlaceSwaps();
    if (stop_.StopNow()) return PlanningStopped();
    recompute_.Run(budget_, result_.stats);
    if (stop_.stopped()) return PlanningStopped();
    PlaceSwaps();
    return absl::OkStatus();
  }

  // Validation and repair: replay, change the draft where the replay shows
  // a problem, until it shows none or the iterations run out.
  absl::Status Repair() {
    for (int iteration = 0; iteration < options_.max_repair_iterations;
         ++iteration) {
      if (stop_.StopNow()) return PlanningStopped();
      SimulationResult r = Replay(draft_.plan(), true);
      if (r.feasible &&
          (!have_best_ || r.iteration_ns < result_.replay.iteration_ns)) {
        have_best_ = true;
        result_.plan = draft_.plan();
        result_.replay = r;
        result_.replay.timeline.clear();
      }
      const int changes = RepairChanges(r);
      if (changes == 0) break;
      ++result_.stats.repair_iterations;
      result_.stats.repairs += changes;
      recompute_.Run(budget_, result_.stats);
      if (stop_.stopped()) return PlanningStopped();
      PlaceSwaps();
    }
    return absl::OkStatus();
  }

  // The draft's changes for what replay `r` shows (docs/planner.md's repair
  // table); how many.
  int RepairChanges(const SimulationResult& r) {
    int changes = 0;
    if (!r.feasible) {
      // Memory that does not fit where the replay gave up: recompute there.
      const int32_t op = r.infeasibility.op;
      const int64_t short_by = r.infeasibility.bytes_needed +
                               r.infeasibility.bytes_resident - budget_;
      if (recompute_.RecomputeAt(op, short_by, result_.stats)) return 1;
      // Nothing left to recompute there: prefetches that arrived early
      // hold the memory. Issue them at their need instead.
      for (int32_t t = 0; t < trace_.num_tensors(); ++t) {
        if (draft_.decision(t) == Decision::kSwap && !issue_at_need_[t] &&
            draft_.need(t) > op && draft_.plan().prefetch_issue_op[t] <= op) {
          issue_at_need_[t] = 1;
          ++changes;
        }
      }
    } else if (r.last_offload_lag_ns > 0 && r.memory_wait_ns > 0) {
      // Offloads lag past the forward pass and the compute stream waited for
      // the memory they hold: drop the latest admitted swap.
      while (!admitted_.empty() &&
             draft_.decision(admitted_.back()) != Decision::kSwap) {
        admitted_.pop_back();
      }
      if (!admitted_.empty()) {
        const int32_t t = admitted_.back();
        admitted_.pop_back();
        Unswap(trace_, t, draft_);
        ++changes;
      }
    } else if (r.prefetch_wait_ns > 0) {
      // A prefetch the admission rule held back for the memory of a step
      // before its need: free memory there (what a memory wait gets);
      // otherwise issue late prefetches earlier.
      if (r.held_prefetch_op >= 0 &&
          recompute_.RecomputeAt(r.held_prefetch_op,
                                 r.held_prefetch_excess_bytes, result_.stats)) {
        ++changes;
      } else {
        changes += RepairLatePrefetches(trace_, r, lead_ns_, draft_);
      }
    } else if (r.memory_wait_ns > 0) {
      // A memory wait with offloads on time: the draft underestimated memory
      // somewhere. Recompute at the peak of the draft.
      if (recompute_.RecomputeAt(draft_.PeakOp(), 1, result_.stats)) ++changes;
    }
    return changes;
  }

  // The plan that swaps every tensor it may (within the host's pinned
  // memory), each prefetched at its need.
  Plan SwapAll() const {
    Plan swap_all = Plan::AllKeep(trace_);
    int64_t swapped = 0;
    const int64_t cap = hardware_.host_pinned_memory_bytes > 0
                            ? hardware_.host_pinned_memory_bytes
                            : std::numeric_limits<int64_t>::max();
    for (int32_t t = 0; t < trace_.num_tensors(); ++t) {
      const Tensor& tensor = trace_.tensors[t];
      if (tensor.swap_forbidden || tensor.size_bytes == 0 ||
          swapped + tensor.size_bytes > cap) {
        continue;
      }
      swap_all.decisions[t] = Decision::kSwap;
      swapped += tensor.size_bytes;
    }
    const std::vector<int32_t> need = DeriveNeeds(trace_, swap_all.decisions);
    for (int32_t t = 0; t < trace_.num_tensors(); ++t) {
      if (swap_all.decisions[t] != Decision::kSwap) continue;
      swap_all.prefetch_issue_op[t] =
          IssueWindowOf(trace_, t, need[t], options_.per_layer_barriers,
                        run_start_)
              .latest;
    }
    return swap_all;
  }

  // Improvement step: a bounded local search, judged by replays, from the
  // best plan (or, where repair found none, from the last attempt).
  absl::Status Improve() {
    PolishOptions polish;
    polish.max_replays = PolishReplays(trace_, options_);
    polish.allow_swap = options_.link_budget_pass;
    polish.per_layer_barriers = options_.per_layer_barriers;
    polish.stop = &stop_;
    polish.prefetch_admission = options_.prefetch_admission;
    polish.physics = options_.physics;
    // The passes' issue points stay here; the anytime search moves them to
    // the earliest (PlannerOptions::earliest_issue). Measured on the
    // held-out study's fast set (docs/planner.md, "Issue points at the
    // earliest"), the search from this step's plan did better than from
    // the plan with its swaps moved (sum of losses 167 against 176, worst
    // cell 8.8% against 18.3%), and the answers that need no search stay
    // the passes'.
    polish.earliest_issue = false;
    // Moves that replay as the plan are replayed and charged here: this
    // step's plan is the answer without the search and the search's start.
    // With them skipped, its fixed budget reaches further; on the held-out
    // study the search then more often started from a plan that completes
    // far above the bound instead of one that does not, from which step 0
    // of the search found better basins (DAG 404 at +10%: a start 5x the
    // best plan known, and an answer 31% above it; docs/planner.md).
    polish.skip_same_replays = false;
    // Its candidates replay from the start: its few replays (about 30 for
    // GPT-2 XL) start from a replay that recorded nothing, and recording
    // their own states cost the presets' plans 3-7% of their time
    // (docs/planner.md).
    polish.resume = false;
    // Starting points: the passes' plan, and where the budget allows a few
    // more searches (small traces), the all-keep plan and the plan that
    // swaps everything it may at its need: a local search stays in its
    // starting point's basin.
    std::vector<Plan> starts = {have_best_ ? result_.plan : draft_.plan()};
    if (polish.max_replays >= 512) {
      starts.push_back(Plan::AllKeep(trace_));
      if (options_.link_budget_pass) starts.push_back(SwapAll());
    }
    for (size_t i = 0; i < starts.size(); ++i) {
      Plan plan = std::move(starts[i]);
      SimulationResult polished =
          i == 0 && have_best_ ? result_.replay : Replay(plan, false);
      const PolishResult p =
          Polish(trace_, hardware_, budget_, polish, plan, polished);
      if (stop_.stopped()) return PlanningStopped();
      result_.stats.polish_replays += static_cast<int32_t>(p.replays);
      result_.stats.polish_changes += p.changes;
      Offer(plan, polished);
    }
    return absl::OkStatus();
  }

  // The anytime search (anytime.h), where the plan is missing or its gap to
  // the bound is above the target. Not for the ablations (their options
  // turn it off): they measure the passes.
  absl::Status Search() {
    const int64_t search_replays = AnytimeReplays(trace_, options_);
    const int64_t target_ns = static_cast<int64_t>(
        static_cast<double>(result_.lower_bound.iteration_ns) *
        (1 + std::max(options_.gap_target, 0.0)));
    if (search_replays <= 0 || !options_.link_budget_pass ||
        (have_best_ && result_.replay.iteration_ns <= target_ns)) {
      return absl::OkStatus();
    }
    Plan plan = have_best_ ? result_.plan : draft_.plan();
    SimulationResult searched =
        have_best_ ? result_.replay : Replay(plan, false);
    AnytimeOptions search;
    search.target_ns = target_ns;
    search.per_layer_barriers = options_.per_layer_barriers;
    search.stop = &stop_;
    search.physics = options_.physics;
    search.earliest_issue = options_.earliest_issue;
    // (The search replays by the any-speed rule: its exact stage proves
    // nothing under another.)
    search.exact_stage =
        options_.prefetch_admission == PrefetchAdmission::kAnySpeed;
    int64_t left = search_replays;
    Workers workers(std::clamp(options_.search_threads, 1, kMaxSearchThreads));
    search.workers = &workers;
    SLACKSWAP_RETURN_IF_ERROR(
        SearchStarts(search_replays, left, workers, search.extra_starts));
    if (stop_.StopNow()) return PlanningStopped();
    search.max_replays = left;
    const AnytimeResult found =
        SearchAnytime(trace_, hardware_, budget_, search, plan, searched);
    if (stop_.stopped()) return PlanningStopped();
    result_.stats.search_replays = found.replays;
    if (Offer(plan, searched)) result_.stats.search_improved = true;
    // The exact stage searched every plan: its answer is the optimum, or
    // where it found none, a proof that no plan fits.
    if (found.exhaustive && searched.feasible) {
      result_.stats.proven_optimal = true;
    } else if (found.exhaustive && !have_best_) {
      result_.proven_infeasible = true;
    }
    return absl::OkStatus();
  }

  // SlackSwap's own plan for a slightly smaller budget (kSmallerBudgets),
  // which fits this one too: the answer here should be no slower; without a
  // plan here, also plans for larger budgets (too big for this one, but the
  // searches start near a feasible plan from them). Each start is a plan of
  // the passes, which the search's limit pays for (in replays, as the passes
  // made them here) while it leaves at least half of the limit to the search
  // itself: `left` is what remains.
  absl::Status SearchStarts(int64_t search_replays, int64_t& left,
                            Workers& workers, std::vector<Plan>& starts) {
    PlannerOptions base = options_;
    base.search_time_ms = 0;
    const int64_t base_replays =
        result_.stats.repair_iterations + 2 + result_.stats.polish_replays;
    const auto afford = [&] {
      if (left - base_replays < search_replays / 2) return false;
      left -= base_replays;
      return true;
    };
    const int64_t peak = AllKeepPeakBytes(trace_);
    const int64_t floor = ComputeProvenFloor(trace_).bytes;
    std::vector<int64_t> budgets;
    for (double less : kSmallerBudgets) {
      const int64_t smaller =
          budget_ - static_cast<int64_t>(less * static_cast<double>(peak));
      if (smaller < floor || !afford()) break;
      budgets.push_back(smaller);
    }
    for (double more : kLargerBudgets) {
      if (have_best_) break;
      const int64_t larger =
          budget_ + static_cast<int64_t>(more * static_cast<double>(peak));
      if (larger >= peak || !afford()) break;
      budgets.push_back(larger);
    }
    // Planned side by side, taken in the order above.
    std::vector<absl::StatusOr<PlanningResult>> plans(budgets.size());
    workers.ForEach(budgets.size(), [&](size_t i) {
      plans[i] = PlanSlackSwap(trace_, hardware_, budgets[i], base);
    });
    for (absl::StatusOr<PlanningResult>& r : plans) {
      SLACKSWAP_RETURN_IF_ERROR(r.status());
      if (r->feasible) starts.push_back(std::move(r->plan));
    }
    return absl::OkStatus();
  }

  const Trace& trace_;
  const Hardware& hardware_;
  const int64_t budget_;
  const PlannerOptions& options_;
  StopPoll stop_;
  const Hardware link_;
  SimulationOptions sim_;
  const IdealTimeline timeline_;
  PlanDraft draft_;
  const std::vector<int32_t> run_start_;
  std::vector<int64_t> lead_ns_;
  std::vector<uint8_t> issue_at_need_;
  RecomputePass recompute_;
  // Still-swapped tensors, in admission order (repair drops the latest).
  std::vector<int32_t> admitted_;
  PlanningResult result_;
  bool have_best_ = false;
};

}  // namespace

absl::StatusOr<PlanningResult> PlanSlackSwap(const Trace& trace,
                                             const Hardware& hardware,
                                             int64_t budget_bytes,
                                             const PlannerOptions& options) {
  SLACKSWAP_RETURN_IF_ERROR(CheckTimeRange(trace, hardware));
  SLACKSWAP_RETURN_IF_ERROR(CheckPhysics(trace, hardware, options.physics));
  return SlackSwapRun(trace, hardware, budget_bytes, options).Run();
}

}  // namespace slackswap
