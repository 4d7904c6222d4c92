// File: repair.h
//
// SlackSwap's repairs, applied between replays of its draft in the event
// model (slackswap.h, validation and repair): a prefetch that arrived late is
// issued earlier, and a swap given up becomes a recomputation or a keep.
#ifndef SLACKSWAP_PLANNER_REPAIR_H_
#define SLACKSWAP_PLANNER_REPAIR_H_

#include <cstdint>
#include <vector>

#include "planner/plan_draft.h"
#include "simulator/event_model.h"
#include "simulator/trace.h"

namespace slackswap {

// A swap that repair gives up: recomputed where allowed and its rebuild
// chain stays short (recompute_pass.h), otherwise kept.
void Unswap(const Trace& trace, int32_t t, PlanDraft& draft);

// Asks every prefetch that arrived after its need op started to be issued
// earlier by more than it was late; a prefetch already issued as early as it
// can be becomes a recomputation (or a keep). Returns the number of changes.
int RepairLatePrefetches(const Trace& trace, const SimulationResult& replay,
                         std::vector<int64_t>& lead_ns, PlanDraft& draft);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_REPAIR_H_
