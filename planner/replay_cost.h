// File: replay_cost.h
//
// What the searches (polish.h, genetic.h, anytime.h) count against their
// budgets: replays, each at the work it did. A replay's work is the
// elements of its trace (ReplayElements: deriving the schedule and setting
// up walk them) plus kEventElements for each event it went through
// (SimulationResult::events: a step or a copy ending; a replay resumed from
// another's states, resume_points.h, is charged for the events it did not
// run too, so that a search makes the same choices in less time). So a
// replay cut off
// early (at SimulationOptions::cutoff_ns, because it cannot beat the plan it
// is compared with, or stuck for memory) counts for what it ran, and a plan
// that rebuilds and swaps much counts for the events it adds. The unit is a
// replay of NominalReplayWork, a full replay of a plan with about one event
// per operator and per tensor. Integer arithmetic on counts the replay gives
// the same everywhere: the same replay costs the same on every machine and
// any threads, so a budget in this currency cuts a search at the same point
// everywhere, and tracks its time closely (docs/planner.md, "What a replay
// costs").
#ifndef SLACKSWAP_PLANNER_REPLAY_COST_H_
#define SLACKSWAP_PLANNER_REPLAY_COST_H_

#include <cstdint>

#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/physics.h"
#include "simulator/trace.h"

namespace slackswap {

// A replay's fixed work beyond its trace's elements, in elements.
inline constexpr int64_t kReplayOverheadElements = 300;
// An event's work, in elements (fitted to the search's times:
// docs/planner.md, "What a replay costs").
inline constexpr int64_t kEventElements = 9;

// The elements of a trace: operators + tensors + uses + recompute inputs +
// fixed transfers + kReplayOverheadElements.
int64_t ReplayElements(const Trace& trace);

// The work of a replay of `trace` with about one event per operator, tensor
// and fixed transfer: ReplayElements + kEventElements times those.
int64_t NominalReplayWork(const Trace& trace);

// Thousandths of a NominalReplayWork that `replay` (of `trace`) cost: its
// ReplayElements plus kEventElements per event, at least 1. A replay that
// ran no event (a candidate turned away before replaying, its steps alone
// too long) costs kReplayOverheadElements; one stopped without a place (a
// cancelled call) costs a nominal replay.
inline constexpr int64_t kReplayMillis = 1000;
int64_t ReplayCostMillis(const Trace& trace, const SimulationResult& replay);

// The most ReplayCostMillis can be for a replay of `trace` on `hardware`
// with `physics` (MaxReplayEvents, event_model.h): a search starts a replay
// only where what is left of its budget covers it, so it never spends more
// than its budget (a replay of a plan that rebuilds and swaps much costs
// more than a nominal one).
int64_t MaxReplayMillis(const Trace& trace, const Hardware& hardware,
                        const Physics& physics);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_REPLAY_COST_H_
