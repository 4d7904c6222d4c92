// File: traffic_run.h
//
// The job's own host traffic alone (the trace's fixed transfers,
// docs/event-model.md "Fixed transfers"): the all-keep plan replayed with
// unlimited memory and no node physics. In every plan each op starts no
// earlier than here (docs/planner.md, "Planning around the job's own host
// traffic"), which the lower bound uses.
//
// Example:
//   const TrafficRun run = RunTrafficAlone(trace, hardware);
//   // run.op_start[o] <= op o's start in any plan's replay.
#ifndef SLACKSWAP_PLANNER_TRAFFIC_RUN_H_
#define SLACKSWAP_PLANNER_TRAFFIC_RUN_H_

#include <cstdint>
#include <vector>

#include "simulator/hardware.h"
#include "simulator/trace.h"

namespace slackswap {

struct TrafficRun {
  std::vector<int64_t> op_start;  // per op
  int64_t iteration_ns = 0;
  // The fixed transfers that may start only after the last op, per
  // direction one after another: the larger direction's sum.
  int64_t tail_ns = 0;
};

// One replay, O(ops + tensors + fixed transfers). Without fixed transfers
// the ops start at their ideal times.
TrafficRun RunTrafficAlone(const Trace& trace, const Hardware& hardware);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_TRAFFIC_RUN_H_
