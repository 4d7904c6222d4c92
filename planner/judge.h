// File: judge.h
//
// Judging a finished plan: replay it in the event model under the budget and
// attach the lower bound. The baselines return their plans through Judge;
// SlackSwap (slackswap.h) and the exact optimum (optimum.h) keep the replay
// their own search made, which is the same event model's replay of the same
// plan. So every policy is measured by the same physics with no
// policy-specific factors.
#ifndef SLACKSWAP_PLANNER_JUDGE_H_
#define SLACKSWAP_PLANNER_JUDGE_H_

#include <cstdint>
#include <string>

#include "planner/slackswap.h"
#include "simulator/hardware.h"
#include "simulator/physics.h"
#include "simulator/plan.h"
#include "simulator/trace.h"

namespace slackswap {

// Replays `plan` (which must be valid for the trace, hardware and barrier
// setting) and fills a result: feasible iff the replay completed; otherwise
// `reason` is the replay's. `lower_bound` must come from ComputeLowerBound for
// the same inputs. The replay applies `physics` (its node part: the
// allocator is judged around the policy, allocator_budget.h).
PlanningResult Judge(const Trace& trace, const Hardware& hardware,
                     int64_t budget_bytes, const Plan& plan,
                     bool per_layer_barriers, const Physics& physics,
                     const LowerBound& lower_bound);

// The result for a budget the lower bound proves infeasible: the all-keep
// plan, its (infeasible) replay, and the bound's reason.
PlanningResult ProvenInfeasible(const Trace& trace, const Hardware& hardware,
                                int64_t budget_bytes, const Physics& physics,
                                const LowerBound& lower_bound);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_JUDGE_H_
