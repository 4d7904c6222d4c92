// File: node_model.h
//
// Several GPUs behind one host uplink, replayed together (docs/event-model.md,
// "Node physics"): the ranks of one job running the same plan in lockstep,
// or the jobs a scheduler places on one node. Each GPU is a Replay
// (replay.h); in each direction the uplink is shared evenly among the
// transfers moving bytes at that instant, none faster than its own GPU's
// link, and with HBM contention an op's speed follows its own GPU's copies.
// Rates change only at events, so every time stays an exact integer.
#ifndef SLACKSWAP_SIMULATOR_NODE_MODEL_H_
#define SLACKSWAP_SIMULATOR_NODE_MODEL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/functional/function_ref.h"
#include "simulator/event_model.h"
#include "simulator/replay.h"

namespace slackswap {
namespace internal {

// A replay on `multiplicity` identical GPUs (ranks that start together and
// so do the same thing at the same instant), starting at global time
// `origin`.
struct Member {
  std::unique_ptr<Replay> replay;
  const Hardware* hardware = nullptr;  // its GPUs' own links
  int32_t multiplicity = 1;
  int64_t origin = 0;
  bool finished = false;
};

// Runs the members until every one has finished (completed or found
// infeasible), sharing `node`'s uplink. When a member finishes at global
// time `now`, `finished(index, now)` is called with its result; it may give
// the member a new replay and origin (>= now) and clear `finished` to run
// it again (a job's next step), except after an infeasible result.
void RunShared(
    std::vector<Member>& members, const Hardware& node,
    absl::FunctionRef<void(size_t, int64_t, SimulationResult)> finished);

// The ranks of one job (hardware.gpus_per_uplink of them, rank r starting
// options.physics.rank_skew_ns * r after rank 0) replaying `plan`: the result
// of the slowest rank (an infeasible one first), with `rank` naming it.
SimulationResult SimulateRanks(const Trace& trace, const Hardware& hardware,
                               const Plan& plan, const Schedule& schedule,
                               const SimulationOptions& options);

}  // namespace internal

// A job placed on a node: `gpus` ranks running `plan` in lockstep, step after
// step. The pointers must outlive SimulateNode.
struct NodeJob {
  const Trace* trace = nullptr;
  const Plan* plan = nullptr;
  const Schedule* schedule = nullptr;  // DeriveSchedule(*trace, *plan)
  SimulationOptions options;           // budget, barriers, allocator
  int32_t gpus = 1;
};

struct NodeJobSteps {
  bool feasible = true;  // false: a step was infeasible (the steps stop)
  std::vector<int64_t> step_ns;  // each step's time, in order
  // The mean over the steps after the first (the first, alone, when only
  // one ran): the steady state.
  int64_t mean_step_ns = 0;
  SimulationResult last;  // the last step's replay
};

// Replays the jobs together on `node` (every GPU's links and latency, HBM
// and switches, and the uplink they all share), each job repeating its step
// until every job has run `steps` of them (jobs that get there first keep
// running, so the others see their traffic; their extra steps are not
// counted, and stop at kMaxStepsPerCounted x `steps` in all, or at once for
// a step that takes no time). O(jobs x steps x replay x
// kMaxStepsPerCounted), with at most 64 GPUs in all.
inline constexpr int kMaxStepsPerCounted = 64;
std::vector<NodeJobSteps> SimulateNode(const std::vector<NodeJob>& jobs,
                                       const Hardware& node, int steps);

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_NODE_MODEL_H_
