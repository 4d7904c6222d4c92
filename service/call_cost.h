// File: call_cost.h
//
// What a call may cost and what it would: the limits a server sets per call,
// and the estimates of memory and work it checks them against before any
// planning starts (docs/service.md, "Limits"). The estimates come from the
// trace's size, the policies and their options (each policy's replay bound
// is its row of planner/policies.h).
#ifndef SLACKSWAP_SERVICE_CALL_COST_H_
#define SLACKSWAP_SERVICE_CALL_COST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "planner/policies.h"
#include "simulator/hardware.h"
#include "simulator/trace.h"

namespace slackswap {

// What one call may cost, checked before any planning starts; 0 turns a
// limit off. Both are estimates from the trace's size and the request
// (docs/service.md, "Limits"), made so that a call within them stays within
// them.
struct CallLimits {
  // Memory a call may take while it plans: the request's trace and its
  // decoded form, the planners' working sets and the response. Over it:
  // RESOURCE_EXHAUSTED naming "trace".
  int64_t max_memory_bytes = 0;
  // Work a call may ask for, in replays of the trace times its elements
  // (operators + tensors + uses + recompute inputs + fixed transfers):
  // budgets x policies x the replays each policy may make. Over it:
  // RESOURCE_EXHAUSTED naming the field that multiplies it.
  int64_t max_work = 0;
};

// The estimates behind CallLimits, for one policy planning `trace` (a plan, a
// comparison entry or a frontier point): the memory from the decoded trace to
// the serialized response, and the work in element-replays. The request's
// bytes are not counted (max_message_bytes bounds them).
struct CallCost {
  int64_t memory_bytes = 0;
  int64_t work = 0;
};
// The memory estimate's parts (docs/service.md, "Limits"): a decoded trace of
// these sizes with the working set of one policy's planning on one GPU, and
// each GPU's replay held at once (with its timeline and the caching
// allocator's state when the call has them; a fixed transfer counts as a
// tensor there).
int64_t TraceMemoryBytes(int64_t operators, int64_t tensors, int64_t relations,
                         int64_t fixed_transfers);
int64_t ReplayMemoryBytes(int64_t operators, int64_t tensors, bool timeline,
                          bool allocator);

// `hardware` says how many GPUs a replay holds at once (skewed ranks each
// replay; ranks in lockstep share one); `timeline`: the call records one.
CallCost EstimatePolicyCost(const Trace& trace, const Hardware& hardware,
                            Policy policy, const PolicyOptions& options,
                            bool timeline = false);

// Memory and work a call holds besides one trace's planning, and the
// fields its refusals name.
struct CostContext {
  absl::string_view memory_field = "trace";
  absl::string_view work_field = "trace";
  bool timeline = false;  // the call records a replay's timeline
  // What the call holds already (a node's other jobs), and how to say so.
  int64_t held_memory_bytes = 0;
  int64_t held_work = 0;
  std::string held_note;
};

// RESOURCE_EXHAUSTED when `runs_per_policy` runs of each policy on
// `hardware`, with what `context` says the call holds already, would pass a
// limit of `limits`, naming context's fields.
absl::Status CheckCallCost(const CallLimits& limits, const Trace& trace,
                           const Hardware& hardware,
                           const std::vector<Policy>& policies,
                           int64_t runs_per_policy,
                           const PolicyOptions& options,
                           const CostContext& context);

}  // namespace slackswap

#endif  // SLACKSWAP_SERVICE_CALL_COST_H_
