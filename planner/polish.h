// File: polish.h
//
// SlackSwap's improvement step after validation and repair: a bounded local
// search over single-tensor changes, each judged by a replay in the event
// model. A change turns one tensor's decision into another (a swap with its
// prefetch issued at its need, as early as it may be, or halfway) or moves a
// swap's issue point; the first change that improves the plan is kept and the
// scan goes on, round after round, until a round keeps nothing or the replay
// budget is spent.
//
// Before each round that follows a change, a feasible plan is also offered
// trades: a kept tensor rebuilt instead while the rebuilt tensors whose span
// between last forward and first backward use lies within its own are kept
// instead, as many as its bytes cover, dearest per byte first. No single
// change makes a trade (keeping one of them alone needs memory the plan does
// not have, rebuilding the other alone only adds time). Once single changes
// stall, every pair of changes is tried where a quarter of the budget left
// covers them all (small traces); on larger ones the trades stand in for that
// scan where rebuilds cost the most. The largest rebuild time saved first; each
// kept where it improves the plan and no rebuild chain grows past the recompute
// pass's limit (kMaxRebuildChain).
//
// A candidate replayed against the plan as it is and not kept is not
// replayed again before the plan changes (two moves that make the same plan;
// the moves after a scan's last change, met again at the start of the next):
// the same changes for fewer replays. Nor is a candidate that only issues a
// swap's prefetch earlier where the plan's replay never found that prefetch
// waiting for its issue point (SimulationOptions::issue_waited): its replay
// would be the plan's (PolishOptions::skip_same_replays).
//
// With a focus (PolishOptions::focus), only the tensors in it are moved,
// and neither trades nor pairs are tried: the anytime search's kicks
// (anytime.h) repair the plan near the tensors they changed.
//
// "Improves" orders plans as the genetic search does: a feasible plan beats
// an infeasible one, a faster feasible plan a slower one, and among
// infeasible plans the one whose replay got further (a later op, then a later
// time): so the search also looks for a feasible plan where repair left none.
//
// Where issuing a prefetch earlier never slows a replay (EarliestIssueIsBest:
// the any-speed rule without contention, skew or allocator), a completed
// plan's swaps are all issued at the earliest points of their windows and
// stay there: only decisions change (PolishOptions::earliest_issue).
//
// The changes are tried most promising first: for a feasible plan, the
// dearest rebuilds first (a short stall may cost less than a rebuild: a swap
// instead, or a keep where memory allows), then the swaps (rebuilt instead
// first where prefetches stall the plan: its link is the bottleneck), then
// the kept tensors by size; for an infeasible one, the tensors resident
// where its replay got stuck first.
//
// Deterministic (no hashing or clocks; with `workers`, candidates are
// replayed a few at a time but read and charged in order, so the changes
// kept and the cost are the same on any number of threads). Cost: at most
// `max_replays` nominal replays of the trace, each replay counted at its
// work (replay_cost.h: a candidate cut off as soon as it cannot beat the
// plan counts for the events it ran); a replay starts only where the budget
// left covers the dearest one (MaxReplayMillis).
#ifndef SLACKSWAP_PLANNER_POLISH_H_
#define SLACKSWAP_PLANNER_POLISH_H_

#include <cstdint>
#include <vector>

#include "base/workers.h"
#include "planner/planner_options.h"
#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/plan.h"
#include "simulator/trace.h"

namespace slackswap {

struct PolishOptions {
  int64_t max_replays = 256;
  // Swaps may be introduced (off for the recompute-only ablation).
  bool allow_swap = true;
  // Replays use per-layer barriers, and issue points stay at or before the
  // first op of their need's block run.
  bool per_layer_barriers = false;
  StopPoll* stop = nullptr;  // may be null
  PrefetchAdmission prefetch_admission = PrefetchAdmission::kAnySpeed;
  // Stop once the plan completes within this many ns (0: never early).
  int64_t target_ns = 0;
  // Where no single change improves the plan, once a call: the link trades
  // (trades.h: a rebuilt tensor swapped, swapped ones cheap to rebuild
  // rebuilt; off only to measure them).
  bool link_trades = true;
  // And the room trades (trades.h: a swapped or rebuilt tensor kept, kept
  // ones cheap to rebuild rebuilt to make room; off only to measure them).
  bool room_trades = true;
  // The node physics every replay applies.
  Physics physics;
  // Replays candidates on these threads (null: on the caller's alone).
  Workers* workers = nullptr;
  // Once the plan completes, the kinds of move kept most often so far in
  // this search are tried first (off only to measure it).
  bool adaptive_order = true;
  // A candidate already replayed against the plan as it is and not kept is
  // not replayed (or charged) again: two moves that make the same plan, or
  // a move tried after the last change of a scan, tried again in the next
  // before any change. Its replay would end the same, so the search keeps
  // the same changes for fewer replays (off only to measure it).
  bool skip_known_failures = true;
  // A move that only issues a swap's prefetch earlier, where the plan's
  // replay never found that prefetch waiting for its issue point
  // (SimulationOptions::issue_waited), makes a plan whose replay is the
  // plan's: it is not replayed (or charged). The same changes, for fewer
  // replays (off only to measure it).
  bool skip_same_replays = true;
  // Candidates' replays start from the plan's replay's saved states where
  // theirs is certain to be the same up to one (resume_points.h): the same
  // replays, each charged for the events it ran, so the budget buys more of
  // them (off only to measure it).
  bool resume = true;
  // Where EarliestIssueIsBest (event_model.h) holds for these options, once
  // the plan completes every swap is issued at the earliest point of its
  // window (IssuedAtEarliest, plan.h; one replay), every candidate keeps its
  // swaps there and the moves change decisions only: a later issue point
  // cannot make a plan faster there, nor an earlier one slower. The same
  // local optima for fewer replays (off only to measure it).
  bool earliest_issue = true;
  // Where not empty (one flag per tensor): only moves on the flagged
  // tensors, and neither trades nor pairs; the search converges when a scan
  // of those moves keeps nothing (the anytime search's kicks, anytime.h).
  std::vector<bool> focus;
  // Only the trades, on a feasible plan: a scan of the memory trades, then
  // one of the link and room trades (where one of those is kept, the memory
  // trades again); no single changes or pairs, and never `converged`. The
  // anytime search's kicks, after one that changed the plan (anytime.h).
  bool trades_only = false;
};

struct PolishResult {
  int64_t replays = 0;  // their cost in replays, rounded up
  int32_t changes = 0;  // improvements kept
  // The search ended at a local optimum: a scan kept nothing, and neither
  // did the trades and the pairs where the replays left covered them.
  // Another search from the plan with no more than those replays
  // (max_replays - replays) keeps nothing either.
  bool converged = false;
};

// Improves `plan` (valid for the trace, hardware and barrier setting) and
// `replay` (its replay under `budget_bytes`, without timeline) in place.
PolishResult Polish(const Trace& trace, const Hardware& hardware,
                    int64_t budget_bytes, const PolishOptions& options,
                    Plan& plan, SimulationResult& replay);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_POLISH_H_
