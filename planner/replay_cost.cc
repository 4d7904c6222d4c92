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

int64_t NominalReplayWork(const Trace& trace) {
  const int64_t events = int64_t{trace.num_ops()} + trace.num_tensors() +
                         static_cast<int64_t>(trace.fixed_transfers.size());
  return ReplayElements(trace) + kEventElements * events;
}

int64_t ReplayCostMillis(const Trace& trace, const SimulationResult& replay) {
  const int64_t nominal = NominalReplayWork(trace);
  if (!replay.feasible && replay.infeasibility.op < 0) return kReplayMillis;
  const int64_t work = replay.events == 0 ? kReplayOverheadElements
                                          : ReplayElements(trace) +
                                                kEventElements * replay.events;
  return std::max<int64_t>(kReplayMillis * work / nominal, 1);
}

int64_t MaxReplayMillis(const Trace& trace, const Hardware& hardware,
                        const Physics& physics) {
  const int64_t nominal = NominalReplayWork(trace);
  const int64_t work =
      ReplayElements(trace) +
      kEventElements * MaxReplayEvents(trace, hardware, physics);
  return (kReplayMillis * work + nominal - 1) / nominal;
}

}  // namespace slackswap
