// File: replay_against.h
//
// The local search's judge (polish.h): how two replays compare, and a
// candidate's replay that stops as soon as it cannot beat the plan it is
// compared with.
#ifndef SLACKSWAP_PLANNER_REPLAY_AGAINST_H_
#define SLACKSWAP_PLANNER_REPLAY_AGAINST_H_

#include <cstdint>
#include <vector>

#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/plan.h"
#include "simulator/schedule.h"
#include "simulator/trace.h"

namespace slackswap {

// a is a better plan than b: a feasible plan beats an infeasible one, a
// faster feasible plan a slower one, and among infeasible plans the one
// whose replay got further (a later op, then a later time).
bool Better(const SimulationResult& a, const SimulationResult& b);

// A replay of `plan` that stops once it cannot be better than `reference`
// (a feasible plan only wins by a shorter iteration: SimulationOptions::
// cutoff_ns). Without replaying when its profiled steps alone take as long.
// Where `waited` is set, the replay marks it (SimulationOptions::
// issue_waited). With `derived`, the plan's schedule (derived for its
// decisions); else with `need`, the plan's needs (DeriveNeeds; taken).
// With `resume`, from another replay's states (SimulationOptions::
// resume_from).
SimulationResult ReplayAgainst(const Trace& trace, const Hardware& hardware,
                               const Plan& plan, SimulationOptions options,
                               const SimulationResult& reference,
                               std::vector<uint8_t>* waited,
                               const Schedule* derived = nullptr,
                               std::vector<int32_t>* need = nullptr,
                               const ResumeBase* resume = nullptr);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_REPLAY_AGAINST_H_
