// File: anytime.h
//
// SlackSwap's search beyond its passes (docs/planner.md, "The anytime
// search"). The passes, repair and the improvement step give a plan in
// milliseconds. When they find none, or the plan's gap to the lower bound is
// above the caller's target, planning goes on within a budget of replays:
//   0. where the plan does not complete, the plan that frees every tensor
//      right after its forward use (swapped where it may be, else rebuilt)
//      replaces it if it completes (near the floor often the only start
//      that does); where none completes still, a genetic round from the
//      plan and the portfolio below, with a quarter of the budget, and its
//      best plan goes on (the local search from a plan that completes
//      converges far sooner than one that must first make it complete);
//   1. the improvement step (polish.h) from the plan, with 3/16 of the
//      budget, and where its plan then completes and it has not converged,
//      on from it until no change improves it (a local optimum) or a
//      quarter of the budget is spent; then, on traces of at most
//      kMaxExactTensors without barriers, the exact stage: the exact
//      optimum's branch and bound (exact_search.h) from the plan with half
//      of what is left (first of all where the plan does not complete);
//      where it finishes, the search ends at the optimum, or with a proof
//      that no plan fits (AnytimeResult::exhaustive); then, where at least
//      twice the replays it took are left, the improvement step from a
//      second start with as many (a local search stays in its start's
//      basin): the fastest of the portfolio below that completes, whose
//      place in the portfolio the result takes;
//   2. rounds of a genetic search (genetic.h) seeded with the plan, the
//      extra starts the caller gives (SlackSwap's plans for other budgets),
//      the all-keep plan, the plan that rebuilds everything it may, the
//      plan that swaps everything it may and the plan of step 0, each with
//      two thirds of what is left (a third while no plan completes: the
//      local search from the first that does needs the rest) and stopping
//      after max(60, a third of its generations) without a better plan;
//   3. after each round, the improvement step from the best plan found,
//      unless that is a plan the step converged at (PolishResult::
//      converged: it would only replay a scan to keep nothing);
//      another round, from the next seed, while a generation's worth of
//      the budget (a population's replays) is left and step 4 has not
//      begun;
//   4. from the first round's step 3 on (the second's on traces of at most
//      100 tensors: the rounds do better there), where the plan completes,
//      kicks with all that is left instead of more rounds (an iterated
//      local search): a few tensors near one drawn at random get other
//      decisions (or, in some kicks, exchange them: one takes another decision
//      d and one near it that had d takes the first one's), the improvement
//      step runs from there on the tensors near it alone
//      (PolishOptions::focus), and the result replaces the plan where it is
//      faster, after which the trades of the improvement step over the whole
//      plan (those the change opened) are tried, each kept where faster.
//      Several kicks per thread run at once, each drawn from the plan as the
//      kicks before it leave it; those after one that beats the plan stop early
//      and are drawn again.
// Where EarliestIssueIsBest (simulator/event_model.h) holds, every stage
// issues each swap at the earliest point of its window once a plan
// completes, and moves decisions only (AnytimeOptions::earliest_issue;
// docs/planner.md, "Issue points at the earliest").
// Each stage stops as soon as a plan completes within `target_ns`. The best
// plan found is kept; a feasible plan is never traded for a slower one.
//
// Deterministic: the budget counts replays, never time; the genetic search
// draws from a fixed seed, and both searches read their candidates' replays
// in order however many threads replay them (`threads`).
#ifndef SLACKSWAP_PLANNER_ANYTIME_H_
#define SLACKSWAP_PLANNER_ANYTIME_H_

#include <cstdint>
#include <vector>

#include "base/workers.h"
#include "planner/planner_options.h"
#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/plan.h"
#include "simulator/trace.h"

namespace slackswap {

// The work (replay_cost.h: a replay's elements plus kEventElements per
// event) that stands for one millisecond of the search; the search's budget
// is this times PlannerOptions::search_time_ms, in nominal replays of the
// trace (NominalReplayWork). Set so that the slowest medium traces of
// docs/benchmarks.md ("The anytime search": 300 tensors, the search to its
// limit) and of docs/results.md section 15 plan within issue 27's 200 ms at
// the default limit (PlannerOptions::search_time_ms) on this machine, on the
// search's two threads; the median searched cell takes about its limit. Until
// stop 52 a replay cost its trace's elements whatever it ran, at 72,000
// element-replays a ms: a search took 0.4 to 1.45 times its limit, as its
// plans rebuilt and swapped little or much (docs/planner.md). 270,000 from
// stop 53 to 54; 295,000 from stop 55, by what resumed candidates and reused
// replay buffers save (docs/planner.md, "What a replay costs"); raised at
// stop 58 by what a cheaper hand-off between the threads saves (base/
// workers.h: the caller no longer sleeps while the team ends its items), to
// 340,000; 408,000 from stop 59, which spends a part of the margin under the
// 200 ms left at stop 58 (its slowest plans took 136-150 ms; now about 165
// ms: docs/planner.md, "Stop 59").
inline constexpr int64_t kSearchWorkPerMs = 408'000;
// The threads the search replays on by default (PlannerOptions::
// search_threads, AnytimeOptions::threads). The plan does not depend on
// them: the budget is kSearchWorkPerMs whatever the threads, which only
// change how long it takes.
inline constexpr int32_t kSearchThreads = 2;

// The replays PlannerOptions::search_time_ms allows on `trace`, in nominal
// replays: 0 when the search is off or the limit allows fewer than
// kMinSearchReplays (a nominal replay of over 680,000 units at the default
// 160 ms: a trace of about 145,000 elements).
inline constexpr int64_t kMinSearchReplays = 96;
// The least a nominal replay counts for in that budget. On traces of a few
// tensors a replay's bookkeeping (a move applied, the threads' hand-off)
// outweighs its elements and events: section 15's small traces, about 580
// units a replay, took up to 197 ms at 160 ms (docs/planner.md). 700 with
// kSearchWorkPerMs at 270,000, 765 at 295,000, 880 at 340,000; raised with
// it each time, so that these traces' budgets stay as they were (the
// bookkeeping gained nothing from what made the replays faster, and the
// slowest of them little from the hand-off of stop 58; at stop 59 the larger
// budget is for the medium traces, where the losses are).
inline constexpr int64_t kMinNominalReplayWork = 1056;
int64_t AnytimeReplays(const Trace& trace, const PlannerOptions& options);

struct AnytimeOptions {
  int64_t max_replays = 0;
  // Stop once a plan completes within this many ns.
  int64_t target_ns = 0;
  bool per_layer_barriers = false;
  // Plans to seed the genetic search with besides the current one (valid
  // for the trace and barrier setting).
  std::vector<Plan> extra_starts;
  StopPoll* stop = nullptr;  // may be null
  // The node physics every replay applies.
  Physics physics;
  // Threads that replay candidates (the result is the same on any number):
  // `workers` where set, else a team of `threads` for the call.
  int32_t threads = kSearchThreads;
  Workers* workers = nullptr;
  // Step 1's local search from a second start, and step 0's genetic round
  // where no start completes (off only to measure them).
  bool second_start = true;
  bool genetic_first = true;
  // Where the plan does not complete after step 1 and its local search
  // ended short of a local optimum, that search goes on before any genetic
  // round of step 2 (off only to measure it).
  bool search_until_complete = true;
  // Step 4's kicks, and among them the exchanges (off only to measure
  // them).
  bool kicks = true;
  bool exchange_kicks = true;
  // After each kick that changes the plan, the trades over the whole plan
  // (PolishOptions::trades_only; off only to measure them).
  bool kick_trades = true;
  // The local search's adaptive order of moves (PolishOptions::
  // adaptive_order; off only to measure it).
  bool adaptive_order = true;
  // Where EarliestIssueIsBest (event_model.h) holds, every swap issued at
  // the earliest point of its window: by the local search once its plan
  // completes (PolishOptions::earliest_issue), the genetic rounds
  // (GeneticOptions::earliest_issue) and the kicks (off only to measure
  // it).
  bool earliest_issue = true;
  // The local searches' link trades (PolishOptions::link_trades; off only
  // to measure them).
  bool link_trades = true;
  // And their room trades (PolishOptions::room_trades; off only to measure
  // them).
  bool room_trades = true;
  // Step 1's exact stage on traces of at most kMaxExactTensors (off only to
  // measure it).
  bool exact_stage = true;
};

struct AnytimeResult {
  int64_t replays = 0;
  bool improved = false;
  // Kicks of step 4 whose plan replaced the search's.
  int64_t kicks_kept = 0;
  // What step 1's local search from the plan spent (at most a quarter of
  // the budget, less what step 0 spent).
  int64_t step_one_replays = 0;
  // The exact stage was exhaustive: the plan is the optimum, or where it
  // does not complete, no plan fits the budget.
  bool exhaustive = false;
};

// Improves `plan` and `replay` (its replay under `budget_bytes`, without
// timeline) in place. Cost: at most options.max_replays replays of the
// trace (plus the seeds' first replays).
AnytimeResult SearchAnytime(const Trace& trace, const Hardware& hardware,
                            int64_t budget_bytes, const AnytimeOptions& options,
                            Plan& plan, SimulationResult& replay);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_ANYTIME_H_
