// Several jobs on one node (simulator/node_model.h): steady-state steps that
// agree with the single-job model where they must, and jobs that slow each
// other only through the uplink they share.
#include "simulator/node_model.h"

#include <vector>

#include "gtest/gtest.h"
#include "simulator/schedule.h"
#include "tests/simulator/test_traces.h"

namespace slackswap {
namespace {

using ::slackswap::testing::ByteNanosecondLink;
using ::slackswap::testing::PlanOf;
using ::slackswap::testing::TinyTrace;

// 100 bytes swapped, prefetched once op 1 ends; op 2 lasts `backward_ns`.
Trace SwapTrace(int64_t backward_ns) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(500), t.Bwd(backward_ns), t.Bwd(10);
  t.Tensor(100, 0, {3});
  return t.Build();
}

Hardware Node(int64_t uplink) {
  Hardware hw = ByteNanosecondLink();
  hw.uplink_d2h_bytes_per_second = uplink;
  hw.uplink_h2d_bytes_per_second = uplink;
  return hw;
}

TEST(NodeModelTest, TwoLikeJobsStepLikeTwoRanksInLockstep) {
  const Trace trace = SwapTrace(50);
  const Plan plan = PlanOf("s", 2);
  const Schedule schedule = DeriveSchedule(trace, plan);
  NodeJob job{&trace, &plan, &schedule, SimulationOptions(), 1};
  const Hardware node = Node(1'000'000'000);
  // Alone, the job's step is the single-GPU one: 620 ns, every step.
  std::vector<NodeJobSteps> alone = SimulateNode({job}, node, 3);
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].step_ns, (std::vector<int64_t>{620, 620, 620}));
  EXPECT_EQ(alone[0].mean_step_ns, 620);
  // Two such jobs share the uplink like two ranks: 720 ns (the prefetch at
  // half rate), as Simulate says for gpus_per_uplink = 2.
  std::vector<NodeJobSteps> both = SimulateNode({job, job}, node, 3);
  Hardware ranks = node;
  ranks.gpus_per_uplink = 2;
  const SimulationResult lockstep =
      *Simulate(trace, ranks, plan, SimulationOptions());
  EXPECT_EQ(lockstep.iteration_ns, 720);
  for (const NodeJobSteps& s : both) {
    EXPECT_TRUE(s.feasible);
    EXPECT_EQ(s.mean_step_ns, 720);
  }
  // One job of two GPUs is the same as two jobs of one.
  job.gpus = 2;
  EXPECT_EQ(SimulateNode({job}, node, 2)[0].mean_step_ns, 720);
}

TEST(NodeModelTest, AJobWithoutCopiesIsNotSlowedAndSlowsNoOne) {
  const Trace trace = SwapTrace(50);
  const Plan swap = PlanOf("s", 2);
  const Plan keep = PlanOf("k");
  const Schedule swap_schedule = DeriveSchedule(trace, swap);
  const Schedule keep_schedule = DeriveSchedule(trace, keep);
  const NodeJob a{&trace, &swap, &swap_schedule, SimulationOptions(), 1};
  const NodeJob b{&trace, &keep, &keep_schedule, SimulationOptions(), 3};
  const std::vector<NodeJobSteps> r =
      SimulateNode({a, b}, Node(1'000'000'000), 4);
  EXPECT_EQ(r[0].mean_step_ns, 620);  // the uplink is a's alone
  EXPECT_EQ(r[1].mean_step_ns, 570);  // b keeps: the sum of its ops
  // Steps that end at different times still count four each.
  EXPECT_EQ(r[0].step_ns.size(), 4u);
  EXPECT_EQ(r[1].step_ns.size(), 4u);
}

TEST(NodeModelTest, JobsOutOfStepShareOnlyWhereTheirCopiesOverlap) {
  // Job a's step (620 ns alone) and job b's (1020 ns alone, its prefetch at
  // 510 under a 500 ns op) drift against each other: their means lie
  // between alone and always-shared.
  const Trace short_trace = SwapTrace(50);
  const Trace long_trace = SwapTrace(500);
  const Plan plan = PlanOf("s", 2);
  const Schedule s1 = DeriveSchedule(short_trace, plan);
  const Schedule s2 = DeriveSchedule(long_trace, plan);
  const std::vector<NodeJobSteps> r =
      SimulateNode({{&short_trace, &plan, &s1, SimulationOptions(), 1},
                    {&long_trace, &plan, &s2, SimulationOptions(), 1}},
                   Node(1'000'000'000), 6);
  EXPECT_GE(r[0].mean_step_ns, 620);
  EXPECT_LE(r[0].mean_step_ns, 720);
  EXPECT_EQ(r[1].mean_step_ns, 1020);  // its prefetch is hidden either way
  // Deterministic.
  const std::vector<NodeJobSteps> again =
      SimulateNode({{&short_trace, &plan, &s1, SimulationOptions(), 1},
                    {&long_trace, &plan, &s2, SimulationOptions(), 1}},
                   Node(1'000'000'000), 6);
  EXPECT_EQ(again[0].step_ns, r[0].step_ns);
}

TEST(NodeModelTest, StepsThatStartWithAnEmptyOpStillAdvance) {
  // Ops of zero duration at a step's start: a restarted job has an event at
  // the very instant it starts (this once stopped the clock).
  TinyTrace t;
  t.Fwd(0), t.Fwd(10), t.Bwd(0), t.Bwd(10);
  t.Tensor(100, 0, {3});
  const Trace trace = t.Build();
  const Plan plan = PlanOf("s", 2);
  const Schedule schedule = DeriveSchedule(trace, plan);
  const NodeJob job{&trace, &plan, &schedule, SimulationOptions(), 1};
  // Alone: offload 0..100, prefetch 100..200, op 3 at 200..210.
  EXPECT_EQ(SimulateNode({job}, Node(1'000'000'000), 3)[0].step_ns,
            (std::vector<int64_t>{210, 210, 210}));
  // Two such jobs halve the uplink: 410 ns a step.
  for (const NodeJobSteps& s : SimulateNode({job, job}, Node(1'000'000'000), 3))
    EXPECT_EQ(s.step_ns, (std::vector<int64_t>{410, 410, 410}));
}

TEST(NodeModelTest, JobsOfNoTimeOrVeryShortStepsDoNotHoldTheNodeUp) {
  // A job whose step takes no time beside one that takes 620 ns: it runs its
  // steps and stops (it once restarted for ever at one instant).
  TinyTrace t;
  t.Fwd(0), t.Bwd(0);
  t.Tensor(100, 0, {1});
  const Trace instant = t.Build();
  const Plan keep = PlanOf("k");
  const Schedule instant_schedule = DeriveSchedule(instant, keep);
  const Trace trace = SwapTrace(50);
  const Plan swap = PlanOf("s", 2);
  const Schedule schedule = DeriveSchedule(trace, swap);
  std::vector<NodeJobSteps> r = SimulateNode(
      {{&instant, &keep, &instant_schedule, SimulationOptions(), 1},
       {&trace, &swap, &schedule, SimulationOptions(), 1}},
      Node(1'000'000'000), 3);
  EXPECT_EQ(r[0].step_ns, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(r[1].step_ns, (std::vector<int64_t>{620, 620, 620}));
  // A 10 ns step beside a 6200 ns one stops after 64 x 3 steps in all: the
  // long job's last steps run alone.
  TinyTrace u;
  u.Fwd(5), u.Bwd(5);
  u.Tensor(100, 0, {1});
  const Trace quick = u.Build();
  const Schedule quick_schedule = DeriveSchedule(quick, keep);
  TinyTrace v;
  v.Fwd(10), v.Fwd(5000), v.Bwd(1180), v.Bwd(10);
  v.Tensor(100, 0, {3});
  const Trace slow = v.Build();
  const Schedule slow_schedule = DeriveSchedule(slow, swap);
  r = SimulateNode({{&quick, &keep, &quick_schedule, SimulationOptions(), 1},
                    {&slow, &swap, &slow_schedule, SimulationOptions(), 1}},
                   Node(1'000'000'000), 3);
  EXPECT_EQ(r[0].step_ns.size(), 3u);
  EXPECT_EQ(r[1].step_ns, (std::vector<int64_t>{6200, 6200, 6200}));
}

}  // namespace
}  // namespace slackswap
