// File: node_planner.h
//
// Planning the jobs a scheduler places on one node (docs/planner.md,
// "Jobs that share a node"): every job's plan chosen jointly against the
// uplink they share, with each job's steady-state step alone and beside the
// others, and the slowdown each job causes the others.
//
// Each job is planned by its policy for a share of the uplink (the node's
// hardware with its own GPU count and the uplink scaled by the share), so
// that its swaps fit the link time it will get; the shares tried are the
// GPUs' even split and a split by each job's demand alone (its swapped bytes
// per ns of step, times its GPUs). SimulateNode replays every candidate set
// of plans together; the set with the least GPU-weighted mean of
// step / ideal wins (ties: the even split). Every plan of a node runs the
// improvement step with a quarter of its usual budget (kNodePolishDivisor).
#ifndef SLACKSWAP_PLANNER_NODE_PLANNER_H_
#define SLACKSWAP_PLANNER_NODE_PLANNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/policies.h"
#include "simulator/hardware.h"
#include "simulator/trace.h"

namespace slackswap {

struct NodePlanJob {
  const Trace* trace = nullptr;  // must outlive PlanNode
  int64_t budget_bytes = 0;
  int32_t gpus = 1;  // its ranks behind the uplink, in lockstep
  Policy policy = Policy::kSlackSwap;
};

struct NodePlanJobResult {
  // The plan chosen; its replay is the single-job model's on the node's
  // hardware with the job's GPUs and its share of the uplink (Simulate with
  // that hardware reproduces it).
  PlanningResult planned;
  double uplink_share = 1;     // the share of the uplink it was planned for
  int64_t alone_step_ns = 0;   // its best plan alone on the node
  int64_t shared_step_ns = 0;  // steady-state mean beside the others
  double slowdown = 1;         // shared / alone
  // Mean over the other jobs of (their step beside it / their step without
  // it) - 1; 0 for a job alone.
  double slowdown_caused = 0;
  bool feasible = true;
  std::string reason;  // when not: why
};

struct NodePlan {
  std::vector<NodePlanJobResult> jobs;
  int32_t candidates = 0;  // share splits replayed together
};

inline constexpr int kMaxNodeJobs = 8;
// Node plans run the improvement step (polish.h) with this fraction of
// PlannerOptions::polish_work.
inline constexpr int kNodePolishDivisor = 4;
inline constexpr int kMaxNodeGpus = 64;

// `jobs` (1 to kMaxNodeJobs, GPUs 1 to kMaxNodeGpus in all) on `node`;
// `steps` per job in the node replays (at least 2). Errors are the
// policies' (a job's policy that cannot plan is an error naming it).
absl::StatusOr<NodePlan> PlanNode(const std::vector<NodePlanJob>& jobs,
                                  const Hardware& node,
                                  const PolicyOptions& options, int steps);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_NODE_PLANNER_H_
