#include "service/call_cost.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/field_violations.h"
#include "base/saturating.h"
#include "planner/allocator_budget.h"
#include "planner/slackswap.h"

namespace slackswap {
namespace {

// Bytes a call holds per operator, tensor and relation while one policy
// plans: the decoded trace, the plan draft and its segment trees, the replays'
// schedules and timelines, the lower bound's arrays and the response. Upper
// bounds of peak-RSS measurements of the server on traces shaped for each
// (docs/service.md, "Limits"; tests/server/hardening_e2e_test.py checks them).
constexpr int64_t kMemoryPerOperator = 320;
constexpr int64_t kMemoryPerTensor = 480;
constexpr int64_t kMemoryPerRelation = 32;
// A fixed transfer: its decoded view and compact form, and its entries in
// the schedule's queues and requirements (an estimate from the arrays'
// sizes; in a replay each counts as a tensor).
constexpr int64_t kMemoryPerFixedTransfer = 256;
// A genetic search also holds its population (twice: parents and children)
// and a schedule per thread.
constexpr int64_t kSearchMemoryPerTensor = 640;
// Clp with a program at kLinearProgramMaxNonzeros (lp_bound.h).
constexpr int64_t kLinearProgramMemory = int64_t{128} << 20;
constexpr int64_t kSearchMemoryPerElement = 64;
// Each GPU replayed at once (every rank when ranks are skewed; one replay
// stands for ranks in lockstep, and one per job on a node): its arrays and
// result; with a timeline, its events; with the caching allocator, its
// blocks and free lists.
// (Measured per rank, 64 skewed ranks of 40,000 operators and 20,000
// tensors: about 1.5 bytes per element for the arrays, 64 per operator for
// the timeline of an all-keep plan, 107 per tensor for the allocator; the
// constants leave room for plans that copy and rebuild every tensor.)
constexpr int64_t kReplayMemoryPerOperator = 8;
constexpr int64_t kReplayMemoryPerTensor = 32;
constexpr int64_t kTimelineMemoryPerOperator = 64;
constexpr int64_t kTimelineMemoryPerTensor = 192;
constexpr int64_t kAllocatorMemoryPerOperator = 32;
constexpr int64_t kAllocatorMemoryPerTensor = 160;

int64_t Elements(const Trace& trace) {
  return int64_t{trace.num_ops()} + trace.num_tensors() +
         static_cast<int64_t>(trace.uses.items.size()) +
         static_cast<int64_t>(trace.recompute_inputs.items.size()) +
         trace.num_fixed_transfers();
}

std::string Mebibytes(int64_t bytes) {
  return absl::StrFormat("%.0f MiB", static_cast<double>(bytes) / (1 << 20));
}

}  // namespace

namespace {

int64_t GpusReplayedAtOnce(const Hardware& hardware, const Physics& physics) {
  return physics.rank_skew_ns > 0 ? std::max(hardware.gpus_per_uplink, 1) : 1;
}

}  // namespace

int64_t ReplayMemoryBytes(int64_t operators, int64_t tensors, bool timeline,
                          bool allocator) {
  int64_t bytes =
      kReplayMemoryPerOperator * operators + kReplayMemoryPerTensor * tensors;
  if (timeline) {
    bytes += kTimelineMemoryPerOperator * operators +
             kTimelineMemoryPerTensor * tensors;
  }
  if (allocator) {
    bytes += kAllocatorMemoryPerOperator * operators +
             kAllocatorMemoryPerTensor * tensors;
  }
  return bytes;
}

int64_t TraceMemoryBytes(int64_t operators, int64_t tensors, int64_t relations,
                         int64_t fixed_transfers) {
  return kMemoryPerOperator * operators + kMemoryPerTensor * tensors +
         kMemoryPerRelation * relations +
         kMemoryPerFixedTransfer * fixed_transfers;
}

CallCost EstimatePolicyCost(const Trace& trace, const Hardware& hardware,
                            Policy policy, const PolicyOptions& options,
                            bool timeline) {
  const int64_t relations =
      static_cast<int64_t>(trace.uses.items.size()) +
      static_cast<int64_t>(trace.recompute_inputs.items.size());
  const int64_t gpus = GpusReplayedAtOnce(hardware, options.physics);
  CallCost cost;
  cost.memory_bytes =
      TraceMemoryBytes(trace.num_ops(), trace.num_tensors(), relations,
                       trace.num_fixed_transfers()) +
      gpus * ReplayMemoryBytes(
                 trace.num_ops(),
                 int64_t{trace.num_tensors()} + trace.num_fixed_transfers(),
                 timeline || policy != Policy::kIdeal,
                 options.physics.allocator != AllocatorKind::kNone);
  if (InfoOf(policy).population_search) {
    cost.memory_bytes += kSearchMemoryPerTensor * trace.num_tensors() +
                         kSearchMemoryPerElement * Elements(trace);
  }
  // The linear program's solver, at its size limit (lp_bound.h).
  if (options.slackswap.linear_program_bound &&
      SlackSwapOptionsFor(policy, options).has_value()) {
    cost.memory_bytes += kLinearProgramMemory;
  }
  cost.work = SaturatingTimes(
      SaturatingTimes(InfoOf(policy).max_replays(trace, options),
                      Elements(trace)),
      gpus);
  return cost;
}

absl::Status CheckCallCost(const CallLimits& limits, const Trace& trace,
                           const Hardware& hardware,
                           const std::vector<Policy>& policies,
                           int64_t runs_per_policy,
                           const PolicyOptions& options,
                           const CostContext& context) {
  int64_t memory = 0, work = 0, most_replays = 0;
  for (Policy policy : policies) {
    const CallCost cost =
        EstimatePolicyCost(trace, hardware, policy, options, context.timeline);
    memory = std::max(memory, cost.memory_bytes);  // policies run one by one
    work = SaturatingPlus(work, SaturatingTimes(cost.work, runs_per_policy));
    most_replays =
        std::max(most_replays, InfoOf(policy).max_replays(trace, options));
  }
  memory = SaturatingPlus(memory, context.held_memory_bytes);
  work = SaturatingPlus(work, context.held_work);
  const int64_t gpus = GpusReplayedAtOnce(hardware, options.physics);
  const std::string gpus_note =
      gpus > 1 ? absl::StrCat(", replayed on ", gpus, " skewed ranks at once")
               : "";
  if (limits.max_memory_bytes > 0 && memory > limits.max_memory_bytes) {
    return TooLargeField(
        context.memory_field,
        absl::StrCat("planning this trace (", trace.num_ops(), " operators, ",
                     trace.num_tensors(), " tensors, ", Elements(trace),
                     " elements in all", gpus_note, context.held_note,
                     ") needs about ", Mebibytes(memory),
                     ", above this server's limit of ",
                     Mebibytes(limits.max_memory_bytes),
                     " per call (--max_call_memory_bytes); split the trace or "
                     "use a server with a larger limit"));
  }
  if (limits.max_work > 0 && work > limits.max_work) {
    return TooLargeField(
        context.work_field,
        absl::StrCat(
            "the call asks for ", runs_per_policy, " run(s) of ",
            policies.size(), " policy(ies), up to ", most_replays,
            " replays each, of a trace of ", Elements(trace), " elements",
            gpus_note, context.held_note, ": about ",
            absl::StrFormat("%.3g", static_cast<double>(work)),
            " element-replays, above this server's limit of ",
            absl::StrFormat("%.3g", static_cast<double>(limits.max_work)),
            " per call (--max_call_work); ask for fewer budgets, policies or "
            "evaluations, or split the request"));
  }
  return absl::OkStatus();
}

}  // namespace slackswap
