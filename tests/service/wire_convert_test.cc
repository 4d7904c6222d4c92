// The conversions between the planner's results and options and their
// messages (service/wire_convert.h): outcomes, reports, planner options.
#include "service/wire_convert.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "planner/slackswap.h"
#include "tests/simulator/test_traces.h"

namespace slackswap {
namespace {

using ::slackswap::testing::ByteNanosecondLink;
using ::slackswap::testing::TinyTrace;

TEST(PlanningReportTest, AnInfeasibleAnswerSaysSoAndCarriesNoOverBudgetPlan) {
  TinyTrace t;
  t.Fwd(10, 0, /*workspace_bytes=*/500), t.Bwd(10);
  t.Tensor(100, 0, {1}, 5);
  const Trace trace = t.Build();
  const absl::StatusOr<PlanningResult> r =
      PlanSlackSwap(trace, ByteNanosecondLink(), 400, PlannerOptions());
  ASSERT_TRUE(r.ok()) << r.status();
  const v1::PlanningReport report = PlanningReportToProto(trace, *r);
  EXPECT_EQ(report.outcome(), v1::PLAN_OUTCOME_INFEASIBLE);
  EXPECT_LE(report.metrics().peak_resident_bytes(), 400);
  EXPECT_TRUE(absl::StrContains(report.reason(), "op 0 needs 600 bytes"))
      << report.reason();
}

TEST(PlanOutcomeTest, EachOutcomeHasItsValue) {
  EXPECT_EQ(PlanOutcomeToProto(PlanOutcome::kPlanned),
            v1::PLAN_OUTCOME_PLANNED);
  EXPECT_EQ(PlanOutcomeToProto(PlanOutcome::kInfeasible),
            v1::PLAN_OUTCOME_INFEASIBLE);
  EXPECT_EQ(PlanOutcomeToProto(PlanOutcome::kNoPlanFound),
            v1::PLAN_OUTCOME_NO_PLAN_FOUND);
}

TEST(PlannerOptionsTest, RejectsBadOptionsNamingTheField) {
  v1::PlannerOptions proto;
  proto.set_guard_fraction(1.5);
  absl::Status status = PlannerOptionsFromProto(proto).status();
  EXPECT_TRUE(absl::StartsWith(status.message(), "options.guard_fraction"))
      << status;
  proto.Clear();
  proto.set_max_repair_iterations(0);
  status = PlannerOptionsFromProto(proto).status();
  EXPECT_TRUE(
      absl::StartsWith(status.message(), "options.max_repair_iterations"))
      << status;
  proto.Clear();
  proto.set_ranking(static_cast<v1::SwapRanking>(42));
  status = PlannerOptionsFromProto(proto).status();
  EXPECT_TRUE(absl::StartsWith(status.message(), "options.ranking")) << status;
  proto.Clear();
  const PlannerOptions defaults = *PlannerOptionsFromProto(proto);
  EXPECT_DOUBLE_EQ(defaults.guard_fraction, 0.01);
  EXPECT_TRUE(defaults.link_budget_pass);
}

}  // namespace
}  // namespace slackswap
