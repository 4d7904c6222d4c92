// File: genetic.h
//
// A genetic algorithm over plans, shared by the SwapAdvisor baseline (keep or
// swap only) and the optimality check (keep, swap or recompute). A genome is a
// plan: a decision per tensor and an issue point per swap. Fitness is the
// plan's replay in the event model: a completed replay by its iteration time,
// any infeasible one worse than every completed one (and, among infeasible
// ones, the one that got further is better).
//
// The first generation holds the seeds, mutants of them and random plans.
// (mu + lambda) selection with the parents kept in the pool: the best plan
// never gets worse than the best seed. Once every plan in the pool completes,
// a child's replay stops as soon as it cannot beat the pool's slowest
// (SimulationOptions::cutoff_ns): such a child would not be kept anyway, so
// the search is the same, only faster. Children are bred one after another
// from a seeded mt19937_64, then replayed in parallel on `threads` threads;
// the result depends on the seed only, not on the thread count.
#ifndef SLACKSWAP_PLANNER_GENETIC_H_
#define SLACKSWAP_PLANNER_GENETIC_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "base/workers.h"
#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/plan.h"
#include "simulator/trace.h"

namespace slackswap {

struct GeneticOptions {
  // Replays in all, seeds included (at least the population).
  int64_t max_evaluations = 10000;
  // Count replays at their work (replay_cost.h) against max_evaluations: a
  // child cut off early (see below) or stuck early counts for the events it
  // ran, and a generation breeds only as many children as the budget left
  // covers at the dearest replay's cost (MaxReplayMillis). Off: every replay
  // counts as one.
  bool charge_partial_replays = false;
  // Stop a child's replay once it cannot beat the pool's slowest plan (see
  // above). The search is the same either way; off only to check that.
  bool cut_off_children = true;
  int32_t population = 48;
  uint64_t seed = 1;
  int32_t threads = 2;
  // Replays children on these threads instead (threads then unused).
  Workers* workers = nullptr;
  bool allow_recompute = true;
  bool per_layer_barriers = false;
  // Checked between generations; true stops the search (deadlines, cancel).
  std::function<bool()> should_stop;
  // Stop once the best plan completes within this many ns (0: never early).
  int64_t target_ns = 0;
  // Stop after this many generations in a row without a better best plan
  // (0: never).
  int32_t stall_generations = 0;
  // The node physics every replay applies.
  Physics physics;
  // Where EarliestIssueIsBest (event_model.h) holds, every plan's swaps are
  // issued at the earliest points of their windows (IssuedAtEarliest,
  // plan.h): the search's draws of issue points could not make a plan
  // faster there; and a child that repeats a plan of the pool or of its
  // generation is bred again (up to 4 times) rather than replayed. The
  // anytime search's rounds set it; the genetic policy keeps the issue
  // points it draws.
  bool earliest_issue = false;
};

struct GeneticResult {
  Plan best;
  SimulationResult replay;  // of `best`
  // Replays run; with charge_partial_replays, their cost in replays
  // (rounded up).
  int64_t evaluations = 0;
  int64_t replays_run = 0;  // whether cut short or not
  int64_t replays_cut = 0;  // of those, cut off (cut_off_children)
  bool stopped = false;     // should_stop ended it early
  // With earliest_issue: children bred again because they repeated a plan
  // of the pool or of their generation.
  int64_t bred_again = 0;
};

// `seeds` must be valid plans for the trace (ValidatePlan); at least one.
GeneticResult RunGenetic(const Trace& trace, const Hardware& hardware,
                         int64_t budget_bytes, const std::vector<Plan>& seeds,
                         const GeneticOptions& options);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_GENETIC_H_
