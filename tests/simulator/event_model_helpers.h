// File: event_model_helpers.h
//
// What the event model's hand-computed tests share: a replay with its
// timeline, and the timeline's events of one kind.
#ifndef SLACKSWAP_TESTS_SIMULATOR_EVENT_MODEL_HELPERS_H_
#define SLACKSWAP_TESTS_SIMULATOR_EVENT_MODEL_HELPERS_H_

#include <vector>

#include "gtest/gtest.h"
#include "simulator/event_model.h"
#include "tests/simulator/test_traces.h"

namespace slackswap {
namespace testing {

inline SimulationResult Replay(
    const Trace& trace, const Plan& plan, int64_t budget = kUnlimitedBytes,
    bool barriers = false, const Hardware& hw = ByteNanosecondLink(),
    PrefetchAdmission rule = PrefetchAdmission::kAnySpeed) {
  SimulationOptions options;
  options.budget_bytes = budget;
  options.per_layer_barriers = barriers;
  options.record_timeline = true;
  options.prefetch_admission = rule;
  absl::StatusOr<SimulationResult> result = Simulate(trace, hw, plan, options);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : SimulationResult();
}

// The timeline events of one kind, in order.
inline std::vector<TimelineEvent> Events(const SimulationResult& r,
                                         TimelineKind kind) {
  std::vector<TimelineEvent> out;
  for (const TimelineEvent& e : r.timeline) {
    if (e.kind == kind) out.push_back(e);
  }
  return out;
}

}  // namespace testing
}  // namespace slackswap

#endif  // SLACKSWAP_TESTS_SIMULATOR_EVENT_MODEL_HELPERS_H_
