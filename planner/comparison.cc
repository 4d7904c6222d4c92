#include "planner/comparison.h"

#include "base/status_macros.h"
#include "planner/planner_proto.h"
#include "simulator/event_model.h"

namespace slackswap {

absl::StatusOr<v1::Comparison> Compare(
    const Trace& trace, const Hardware& hardware,
    const std::vector<int64_t>& budgets_bytes,
    const std::vector<Policy>& policies, const PolicyOptions& options,
    const std::function<bool()>& should_stop) {
  v1::Comparison comparison;
  const int64_t peak = AllKeepPeakBytes(trace);
  comparison.set_all_keep_peak_bytes(peak);
  comparison.set_ideal_ns(trace.ideal_ns);
  for (int64_t budget : budgets_bytes) {
    for (Policy policy : policies) {
      if (should_stop && should_stop())
        return absl::CancelledError("comparison stopped");
      SLACKSWAP_ASSIGN_OR_RETURN(
          PlanningResult result,
          RunPolicy(policy, trace, hardware, budget, options));
      v1::ComparisonEntry* entry = comparison.add_entries();
      entry->set_policy(PolicyToProto(policy));
      entry->set_budget_bytes(budget);
      entry->set_budget_fraction_of_peak(
          peak > 0 ? static_cast<double>(budget) / peak : 0);
      *entry->mutable_report() = PlanningReportToProto(trace, result);
      entry->mutable_report()->clear_plan();
    }
  }
  return comparison;
}

}  // namespace slackswap
