// Medium traces at a budget near their floor, shared by the tests of the
// searches' cost and threads (tests/planner/replay_cost_test.cc,
// tests/planner/search_threads_test.cc).
#ifndef SLACKSWAP_TESTS_PLANNER_MEDIUM_CASES_H_
#define SLACKSWAP_TESTS_PLANNER_MEDIUM_CASES_H_

#include <cstdint>
#include <utility>

#include "planner/lower_bound.h"
#include "planner/slackswap.h"
#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/medium_traces.h"
#include "simulator/trace.h"
#include "simulator/trace_validation.h"

namespace slackswap::testing {

struct MediumCase {
  Trace trace;
  Hardware hardware;
  int64_t budget = 0;
};

// The medium trace of `shape` from `seed` (at most `max_tensors` tensors)
// on its hardware, with a budget `percent`% of the way from its proven floor
// to its all-keep peak.
inline MediumCase MakeMediumCase(MediumShape shape, uint64_t seed,
                                 int32_t max_tensors, int64_t percent) {
  MediumTraceOptions options;
  options.shape = shape;
  options.max_tensors = max_tensors;
  const MediumTrace medium = RandomMediumTrace(seed, options);
  MediumCase c{*ValidateTrace(medium.trace), medium.hardware, 0};
  const int64_t floor = ComputeProvenFloor(c.trace).bytes;
  c.budget = floor + (AllKeepPeakBytes(c.trace) - floor) * percent / 100;
  return c;
}

// SlackSwap's passes on the case without the anytime search, and without
// the improvement step unless `polish`: the start the search tests improve.
inline PlanningResult PassesPlan(const MediumCase& c, bool polish) {
  PlannerOptions passes;
  passes.search_time_ms = 0;
  if (!polish) passes.polish_work = 0;
  return *PlanSlackSwap(c.trace, c.hardware, c.budget, passes);
}

}  // namespace slackswap::testing

#endif  // SLACKSWAP_TESTS_PLANNER_MEDIUM_CASES_H_
