// File: issue_points.h
//
// Where SlackSwap places each swapped tensor's two lifetimes in its draft:
// when the forward copy can go (its offload's end on the ideal timeline, the
// D2H queue in production order) and the prefetch's issue point.
#ifndef SLACKSWAP_PLANNER_ISSUE_POINTS_H_
#define SLACKSWAP_PLANNER_ISSUE_POINTS_H_

#include <cstdint>
#include <vector>

#include "planner/plan_draft.h"
#include "simulator/hardware.h"
#include "simulator/trace.h"

namespace slackswap {

// Places every swapped tensor's two lifetimes in the draft: the forward copy
// lives until its FIFO offload ends (ideal timeline), and the prefetch is
// issued as late as the deadline-ordered H2D queue allows, `lead_ns[t]`
// earlier still, on a timeline that includes the rebuilds before each op; or,
// where `issue_at_need[t]` is set, at its need (the last moment memory allows).
//
// `run_start` is BlockRunStarts(trace) (simulator/plan.h); with `barriers` an
// issue point is the start of its need's block run. O(n log n) in the swapped
// tensors.
void PlaceSwaps(const Trace& trace, const Hardware& hw,
                const IdealTimeline& timeline,
                const std::vector<int32_t>& run_start, bool barriers,
                const std::vector<int64_t>& lead_ns,
                const std::vector<uint8_t>& issue_at_need, PlanDraft& draft);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_ISSUE_POINTS_H_
