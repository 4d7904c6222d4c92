// File: replay_cost.h
//
// What the searches (polish.h, genetic.h, anytime.h) count against their
// budgets: replays, where a replay that stopped early (cut off at
// SimulationOptions::cutoff_ns because it cannot beat the plan it is
// compared with, or stuck for memory) counts for the share of the work it
// did. The work of a replay is its trace's elements (ReplayElements), of
// which a third (at least kReplayOverheadElements) is fixed (deriving the
// schedule, setting up) and the rest walked in operator order: one stopped
// at operator k of n did the fixed part and k/n of the rest. Integer arithmetic
// only: the same replay costs the same on every machine, so a budget in this
// currency cuts a search at the same point everywhere.
#ifndef SLACKSWAP_PLANNER_REPLAY_COST_H_
#define SLACKSWAP_PLANNER_REPLAY_COST_H_

#include <cstdint>

#include "simulator/event_model.h"
#include "simulator/trace.h"

namespace slackswap {

// A replay's fixed work beyond its trace's elements, in elements.
inline constexpr int64_t kReplayOverheadElements = 300;

// One replay's work in elements: operators + tensors + uses + recompute
// inputs + fixed transfers + kReplayOverheadElements.
int64_t ReplayElements(const Trace& trace);

// Thousandths of a replay that `replay` (of `trace`) cost: 1000 when it ran
// to the end, at least 1.
inline constexpr int64_t kReplayMillis = 1000;
int64_t ReplayCostMillis(const Trace& trace, const SimulationResult& replay);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_REPLAY_COST_H_
