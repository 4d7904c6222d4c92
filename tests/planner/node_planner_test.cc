// Planning jobs that share a node (planner/node_planner.h): a job alone is
// its own best plan; jobs on an uplink without a cap never slow each other;
// jobs on a capped one are planned for their shares, within their budgets,
// deterministically.
#include "planner/node_planner.h"

#include <vector>

#include "gtest/gtest.h"
#include "simulator/event_model.h"
#include "tests/simulator/random_plans.h"

namespace slackswap {
namespace {

using ::slackswap::testing::SmallWorkloads;
using ::slackswap::testing::Workload;

const std::vector<Workload>& Workloads() {
  static const auto* workloads =
      new std::vector<Workload>(SmallWorkloads(3, {"a100"}));
  return *workloads;
}

NodePlanJob Job(const Workload& w, double fraction, int32_t gpus) {
  NodePlanJob job;
  job.trace = &w.trace;
  job.budget_bytes = static_cast<int64_t>(AllKeepPeakBytes(w.trace) * fraction);
  job.gpus = gpus;
  return job;
}

NodePlan PlanOrDie(const std::vector<NodePlanJob>& jobs, const Hardware& node) {
  absl::StatusOr<NodePlan> plan = PlanNode(jobs, node, PolicyOptions(), 4);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *std::move(plan) : NodePlan();
}

TEST(NodePlannerTest, AJobAloneIsItsOwnBestPlan) {
  const Workload& w = Workloads()[0];
  Hardware node = w.hardware;
  node.uplink_d2h_bytes_per_second = node.d2h_bytes_per_second;
  node.uplink_h2d_bytes_per_second = node.h2d_bytes_per_second;
  const NodePlan plan = PlanOrDie({Job(w, 0.4, 2)}, node);
  ASSERT_EQ(plan.jobs.size(), 1u);
  const NodePlanJobResult& r = plan.jobs[0];
  EXPECT_TRUE(r.feasible) << r.reason;
  EXPECT_EQ(plan.candidates, 1);
  EXPECT_EQ(r.uplink_share, 1.0);
  EXPECT_EQ(r.shared_step_ns, r.alone_step_ns);
  EXPECT_EQ(r.slowdown, 1.0);
  EXPECT_EQ(r.slowdown_caused, 0.0);
  // The node replay agrees with the single-job model for its ranks.
  EXPECT_EQ(r.planned.replay.iteration_ns, r.alone_step_ns);
}

TEST(NodePlannerTest, WithoutAnUplinkCapJobsAreIndependent) {
  std::vector<NodePlanJob> jobs;
  for (size_t i = 0; i < 3 && i < Workloads().size(); ++i)
    jobs.push_back(Job(Workloads()[i], 0.8, 1 + static_cast<int32_t>(i)));
  const NodePlan plan = PlanOrDie(jobs, Workloads()[0].hardware);
  EXPECT_EQ(plan.candidates, 1);
  for (const NodePlanJobResult& r : plan.jobs) {
    ASSERT_TRUE(r.feasible) << r.reason;
    EXPECT_EQ(r.shared_step_ns, r.alone_step_ns);
    EXPECT_EQ(r.slowdown_caused, 0.0);
  }
}

TEST(NodePlannerTest, JobsOnACappedUplinkArePlannedForTheirShares) {
  int slowed = 0;
  for (size_t a = 0; a + 1 < Workloads().size(); ++a) {
    const Workload& x = Workloads()[a];
    const Workload& y = Workloads()[a + 1];
    SCOPED_TRACE(x.name + " beside " + y.name);
    Hardware node = x.hardware;
    node.uplink_d2h_bytes_per_second = node.d2h_bytes_per_second;
    node.uplink_h2d_bytes_per_second = node.h2d_bytes_per_second;
    const std::vector<NodePlanJob> jobs = {Job(x, 0.4, 2), Job(y, 0.5, 2)};
    const NodePlan plan = PlanOrDie(jobs, node);
    ASSERT_EQ(plan.jobs.size(), 2u);
    double shares = 0;
    for (size_t j = 0; j < 2; ++j) {
      const NodePlanJobResult& r = plan.jobs[j];
      shares += r.uplink_share;
      if (!r.feasible) continue;
      EXPECT_LE(r.planned.replay.peak_resident_bytes, jobs[j].budget_bytes);
      EXPECT_GE(r.shared_step_ns, jobs[j].trace->ideal_ns);
      if (r.slowdown > 1.0) ++slowed;
    }
    EXPECT_NEAR(shares, 1.0, 0.25);
    // The same request, the same plans.
    const NodePlan again = PlanOrDie(jobs, node);
    for (size_t j = 0; j < 2; ++j) {
      EXPECT_EQ(again.jobs[j].planned.plan.decisions,
                plan.jobs[j].planned.plan.decisions);
      EXPECT_EQ(again.jobs[j].shared_step_ns, plan.jobs[j].shared_step_ns);
    }
  }
  EXPECT_GT(slowed, 0);
}

}  // namespace
}  // namespace slackswap
