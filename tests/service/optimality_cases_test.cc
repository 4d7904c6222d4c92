// The exact optimum (planner/optimum.h) against the repro cases' proven
// optima: each case's trace, hardware and optimal plan are stored as
// slackswap.v1 JSON (tests/planner/cases/optimality), read through the
// service's conversions.
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "planner/optimum.h"
#include "service/trace_convert.h"
#include "service/wire_convert.h"
#include "simulator/event_model.h"
#include "slackswap/v1/hardware.pb.h"
#include "slackswap/v1/plan.pb.h"

#ifndef SLACKSWAP_CASES_DIR
#error "SLACKSWAP_CASES_DIR must name tests/planner/cases/optimality"
#endif

namespace slackswap {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

template <typename Message>
Message ReadJson(const std::string& path) {
  Message m;
  const auto status =
      google::protobuf::util::JsonStringToMessage(Read(path), &m);
  EXPECT_TRUE(status.ok()) << path << ": " << status.ToString();
  return m;
}

// A number from the flat JSON of case.json ("budget": 123).
int64_t JsonNumber(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\":");
  EXPECT_NE(at, std::string::npos) << key;
  return std::stoll(json.substr(at + key.size() + 3));
}

struct ReproCase {
  std::string name;
  Trace trace;
  Hardware hardware;
  int64_t budget = 0;
  int64_t optimum_ns = 0;
  Plan optimal_plan;
};

ReproCase LoadCase(const std::string& name) {
  const std::string dir = std::string(SLACKSWAP_CASES_DIR) + "/" + name;
  ReproCase c;
  c.name = name;
  c.trace = *TraceFromProto(ReadJson<v1::Trace>(dir + "/trace.json"));
  c.hardware = *HardwareFromProto(ReadJson<v1::Hardware>(dir + "/hw.json"));
  const std::string json = Read(dir + "/case.json");
  c.budget = JsonNumber(json, "budget");
  // The optimum's time: the "time" after "optimum".
  c.optimum_ns = JsonNumber(json.substr(json.find("\"optimum\"")), "time");
  c.optimal_plan =
      *PlanFromProto(c.trace, ReadJson<v1::Plan>(dir + "/opt.plan.json"));
  return c;
}

const char* const kCases[] = {
    "chain19_0.7pk",  "chain21_floor", "chain44_floor",
    "chain4_fp25pct", "chain69_floor", "chain82_floor",
    "chain92_floor",  "fuzz266_floor", "fuzz511_floor"};

TEST(OptimumTest, FindsTheProvenOptimumOfEveryReproCase) {
  for (const char* name : kCases) {
    SCOPED_TRACE(name);
    const ReproCase c = LoadCase(name);
    // The case's optimal plan replays within the budget in the stated time.
    SimulationOptions sim;
    sim.budget_bytes = c.budget;
    const absl::StatusOr<SimulationResult> replay =
        Simulate(c.trace, c.hardware, c.optimal_plan, sim);
    ASSERT_TRUE(replay.ok()) << replay.status();
    ASSERT_TRUE(replay->feasible);
    EXPECT_EQ(replay->iteration_ns, c.optimum_ns);
    const absl::StatusOr<PlanningResult> optimum =
        PlanOptimum(c.trace, c.hardware, c.budget, OptimumOptions());
    ASSERT_TRUE(optimum.ok()) << optimum.status();
    ASSERT_TRUE(optimum->feasible) << optimum->reason;
    EXPECT_EQ(optimum->replay.iteration_ns, c.optimum_ns);
    EXPECT_LE(optimum->replay.peak_resident_bytes, c.budget);
    // Below the floor-labelled cases' budget nothing fits.
    if (absl::string_view(name).find("floor") != absl::string_view::npos) {
      const absl::StatusOr<PlanningResult> below =
          PlanOptimum(c.trace, c.hardware, c.budget - 1, OptimumOptions());
      ASSERT_TRUE(below.ok());
      EXPECT_FALSE(below->feasible);
    }
  }
}

}  // namespace
}  // namespace slackswap
