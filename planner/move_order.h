// File: move_order.h
//
// The order in which the improvement step (polish.h) scans a plan's tensors
// for moves: while the plan is stuck, the tensors alive where it stuck first;
// once it completes, the rebuilt tensors (dearest rebuild first), then the
// swapped and the kept ones (largest first). Ties by tensor id.
#ifndef SLACKSWAP_PLANNER_MOVE_ORDER_H_
#define SLACKSWAP_PLANNER_MOVE_ORDER_H_

#include <cstdint>
#include <vector>

#include "simulator/event_model.h"
#include "simulator/plan.h"
#include "simulator/trace.h"

namespace slackswap {

// The tensors of `plan` (whose replay is `replay`) with bytes, in `focus`
// where it is not empty, in scan order.
std::vector<int32_t> TensorsInMoveOrder(const Trace& trace,
                                        const std::vector<bool>& focus,
                                        const Plan& plan,
                                        const SimulationResult& replay);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_MOVE_ORDER_H_
