// The frontier search (planner/frontier.h) against a made-up planner whose
// answers are known: it plans from a threshold up, at a throughput that grows
// with the budget.
#include "planner/frontier.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "planner/lower_bound.h"
#include "simulator/event_model.h"
#include "tests/simulator/test_traces.h"

namespace slackswap {
namespace {

using ::slackswap::testing::TinyTrace;

// Four layers' activations, each read by one backward op: all four are held
// at the end of forward (the peak), one at a time is the floor.
Trace FourLayers() {
  TinyTrace t;
  for (int i = 0; i < 4; ++i) t.Fwd(10);
  for (int i = 0; i < 4; ++i) t.Bwd(10);
  for (int i = 0; i < 4; ++i) t.Tensor(100000, i, {7 - i}, 5);
  return t.Build();
}

struct FakePlanner {
  int64_t threshold;
  int64_t peak;
  int calls = 0;
  absl::StatusOr<PlanningResult> operator()(int64_t budget) {
    ++calls;
    PlanningResult r;
    r.feasible = budget >= threshold;
    r.replay.throughput_ratio =
        static_cast<double>(budget) / static_cast<double>(peak);
    r.replay.iteration_ns = 1000;
    return r;
  }
};

TEST(FrontierTest, StartsAtTheSmallestPlannedBudgetAboveTheFloor) {
  const Trace trace = FourLayers();
  const int64_t peak = AllKeepPeakBytes(trace);
  const int64_t floor = ComputeProvenFloor(trace).bytes;
  ASSERT_LT(floor, peak);
  FakePlanner planner{floor + (peak - floor) / 3, peak};
  const std::vector<double> fractions = {0.01, 0.9, 1.0};
  absl::StatusOr<FrontierCurve> curve = ComputeFrontier(
      trace, fractions, 0, [&](int64_t b) { return planner(b); });
  ASSERT_TRUE(curve.ok()) << curve.status();
  EXPECT_EQ(curve->all_keep_peak_bytes, peak);
  EXPECT_EQ(curve->proven_floor_bytes, floor);
  // 1% is below the floor: left out. The first point is the threshold,
  // found to within 1/1000 of the peak, and it plans.
  ASSERT_EQ(curve->points.size(), 3u);
  const FrontierPoint& first = curve->points[0];
  EXPECT_TRUE(first.planned);
  EXPECT_GE(first.budget_bytes, planner.threshold);
  EXPECT_LE(first.budget_bytes, planner.threshold + peak / 1000);
  EXPECT_EQ(curve->points[1].budget_bytes, static_cast<int64_t>(0.9 * peak));
  EXPECT_EQ(curve->points[2].budget_bytes, peak);
  EXPECT_FALSE(curve->target_reached);
  EXPECT_LE(planner.calls, static_cast<int>(fractions.size()) + 11);
}

TEST(FrontierTest, FindsTheSmallestBudgetThatReachesATarget) {
  const Trace trace = FourLayers();
  const int64_t peak = AllKeepPeakBytes(trace);
  const int64_t floor = ComputeProvenFloor(trace).bytes;
  FakePlanner planner{floor, peak};
  const double target = 0.8;
  absl::StatusOr<FrontierCurve> curve = ComputeFrontier(
      trace, {0.5, 0.9}, target, [&](int64_t b) { return planner(b); });
  ASSERT_TRUE(curve.ok()) << curve.status();
  ASSERT_TRUE(curve->target_reached);
  const FrontierPoint& best = curve->smallest_budget;
  EXPECT_GE(best.throughput_ratio, target);
  // Within the bisection's precision of the true answer, 0.8 of the peak.
  EXPECT_LE(best.budget_bytes - static_cast<int64_t>(target * peak),
            peak / 1000 + 1);
  EXPECT_LE(planner.calls, 2 + 11 + 12);
  // A target nothing reaches below the peak is reached at the peak only.
  FakePlanner never{floor, 2 * peak};
  curve =
      ComputeFrontier(trace, {0.5}, 0.9, [&](int64_t b) { return never(b); });
  ASSERT_TRUE(curve.ok());
  EXPECT_FALSE(curve->target_reached);
}

TEST(FrontierTest, PlanningErrorsPassThrough) {
  const Trace trace = FourLayers();
  absl::StatusOr<FrontierCurve> curve =
      ComputeFrontier(trace, {0.5}, 0, [](int64_t) {
        return absl::StatusOr<PlanningResult>(absl::CancelledError("stop"));
      });
  EXPECT_EQ(curve.status().code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace slackswap
