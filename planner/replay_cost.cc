#include "planner/replay_cost.h"

#include <algorithm>

namespace slackswap {

int64_t ReplayElements(const Trace& trace) {
  return int64_t{trace.num_ops()} + trace.num_tensors() +
         static_cast<int64_t>(trace.uses.items.size()) +
         static_cast<int64_t>(trace.recompute_inputs.items.size()) +
         static_cast<int64_t>(trace.fixed_transfers.size()) +
         kReplayOverheadElements;
}

int64_t ReplayCostMillis(const Trace& trace, const SimulationResult& replay) {
  const int64_t ops = trace.num_ops();
  // A replay that ran to the end, or was stopped without a place (a
  // cancelled call), costs in full.
  if (replay.feasible || ops <= 0 || replay.infeasibility.op < 0) {
    return kReplayMillis;
  }
  const int64_t total = ReplayElements(trace);
  // The schedule's derivation and the replay's setup: a third, measured at
  // less (docs/benchmarks.md, "The anytime search"), so that a budget never
  // runs over its time.
  const int64_t fixed = std::max(kReplayOverheadElements, total / 3);
  const int64_t reached = std::min<int64_t>(replay.infeasibility.op, ops);
  const int64_t done = fixed + (total - fixed) * reached / ops;
  return std::clamp<int64_t>(kReplayMillis * done / total, 1, kReplayMillis);
}

}  // namespace slackswap
