// File: basic_plans.h
//
// The two reference plans every other policy is measured against:
//   - Ideal: all keep, memory unlimited (the throughput reference);
//   - all-swap: every swappable tensor swapped, each prefetch issued at the
//     first backward operator (the earliest point at which the forward pass,
//     and with it the activation peak, is over), the rest kept;
// and the plan that frees everything, a start of the anytime search.
#ifndef SLACKSWAP_PLANNER_BASIC_PLANS_H_
#define SLACKSWAP_PLANNER_BASIC_PLANS_H_

#include "simulator/plan.h"
#include "simulator/trace.h"

namespace slackswap {

// All keep. Simulated with an unlimited budget it is the Ideal policy.
Plan IdealPlan(const Trace& trace);

// Swap everything that may be swapped; keep the rest.
Plan AllSwapPlan(const Trace& trace);

// Frees every tensor it can right after its last forward use: swapped where
// it may be, else rebuilt where it may be (prefetches issued at the first
// backward op, the admission rule holding them for memory). Near the proven
// floor often the only plan that completes, where the all-swap plan keeps
// the tensors it may not swap and the all-rebuild plan holds whole chains at
// once (anytime.h, step 0).
Plan FreeEverythingPlan(const Trace& trace);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_BASIC_PLANS_H_
