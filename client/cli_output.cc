#include "client/cli_output.h"

#include <cstdio>
#include <iostream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/field_violations.h"
#include "simulator/event_model.h"

namespace slackswap {
namespace {

std::string OffloadLag(const v1::Metrics& m) {
  if (m.swapped_bytes() == 0) return "nothing offloaded";
  if (m.last_offload_lag_ns() <= 0) {
    return "offloads done " + Millis(-m.last_offload_lag_ns()) +
           " before the forward pass ended";
  }
  return "last offload ended " + Millis(m.last_offload_lag_ns()) +
         " after the forward pass";
}

}  // namespace

// The message, then every field violation it carries when there are more
// than the one the message names (in-process and remote alike).
int ExitFor(const absl::Status& status, int exit_code) {
  std::cerr << "slackswap: " << status.message() << "\n";
  const std::vector<slackswap::FieldViolation> violations =
      slackswap::FieldViolationsOf(status);
  if (violations.size() > 1) {
    for (const slackswap::FieldViolation& v : violations)
      std::cerr << "  " << v.field << ": " << v.description << "\n";
  }
  return exit_code;
}

std::string OutcomeWord(v1::PlanOutcome outcome, bool lower_case) {
  switch (outcome) {
    case v1::PLAN_OUTCOME_PLANNED:
      return lower_case ? "planned" : "PLANNED";
    case v1::PLAN_OUTCOME_INFEASIBLE:
      return lower_case ? "infeasible" : "INFEASIBLE";
    case v1::PLAN_OUTCOME_NO_PLAN_FOUND:
      return lower_case ? "no plan found" : "NO PLAN FOUND";
    default:
      return lower_case ? "unknown" : "UNKNOWN";
  }
}

std::string WorkloadLine(const Inputs& in, int64_t ideal_ns,
                         int64_t all_keep_peak_bytes) {
  return absl::StrFormat("trace %s; hardware %s; ideal %s; all-keep peak %s\n",
                         in.trace.name, in.hardware.name, Millis(ideal_ns),
                         Gigabytes(all_keep_peak_bytes));
}

void PrintMetrics(const Inputs& in, const std::string& policy,
                  const v1::Metrics& m) {
  const int64_t peak = AllKeepPeakBytes(in.trace);
  std::string budget = Gigabytes(m.budget_bytes());
  if (m.budget_bytes() != kUnlimitedBytes && peak > 0) {
    absl::StrAppend(
        &budget,
        absl::StrFormat(" (%.1f%% of the all-keep peak, %s)",
                        100.0 * m.budget_bytes() / peak, Gigabytes(peak)));
  }
  std::cout << absl::StrFormat(
      "trace        %s (%d ops, %d tensors, %s saved)\n"
      "hardware     %s (D2H %s/s, H2D %s/s)\n"
      "policy       %s\n"
      "budget       %s\n",
      in.trace.name, in.trace.num_ops(), in.trace.num_tensors(),
      Gigabytes(in.trace.total_tensor_bytes), in.hardware.name,
      Gigabytes(in.hardware.d2h_bytes_per_second),
      Gigabytes(in.hardware.h2d_bytes_per_second), policy, budget);
  if (m.outcome() != v1::SIMULATION_OUTCOME_COMPLETED) {
    std::cout << "outcome      INFEASIBLE: " << m.infeasibility().reason()
              << "\n";
    return;
  }
  std::cout << absl::StrFormat(
      "outcome      completed\n"
      "iteration    %s (ideal %s): %.1f%% of ideal throughput\n"
      "stall        prefetch %s, memory %s, barrier %s%s\n"
      "recompute    %s\n"
      "bytes        kept %s, swapped %s, recomputed %s; peak resident %s\n"
      "link         D2H busy %s, H2D busy %s; %s\n",
      Millis(m.iteration_ns()), Millis(m.ideal_ns()),
      100 * m.throughput_ratio(), Millis(m.prefetch_wait_ns()),
      Millis(m.memory_wait_ns()), Millis(m.barrier_wait_ns()),
      // (Only a trace with fixed transfers can wait for them.)
      m.fixed_transfer_wait_ns() > 0
          ? ", fixed transfers " + Millis(m.fixed_transfer_wait_ns())
          : "",
      Millis(m.recompute_ns()), Gigabytes(m.kept_bytes()),
      Gigabytes(m.swapped_bytes()), Gigabytes(m.recomputed_bytes()),
      Gigabytes(m.peak_resident_bytes()), Millis(m.d2h_busy_ns()),
      Millis(m.h2d_busy_ns()), OffloadLag(m));
  if (m.scaled_size() > 0) {
    // "link x0.5 64.3%, ...": each at its own speed.
    std::string speeds;
    for (const v1::ScaledReplay& s : m.scaled()) {
      if (!speeds.empty()) speeds += ", ";
      const std::string name =
          s.link_speed_factor() != 1
              ? absl::StrFormat("link x%g", s.link_speed_factor())
              : absl::StrFormat("kernels x%g", s.kernel_time_factor());
      if (s.outcome() == v1::SIMULATION_OUTCOME_COMPLETED) {
        absl::StrAppend(&speeds, name,
                        absl::StrFormat(" %.1f%%", 100 * s.throughput_ratio()));
      } else {
        absl::StrAppend(&speeds, name,
                        s.outcome() == v1::SIMULATION_OUTCOME_INFEASIBLE
                            ? " INFEASIBLE"
                            : " not replayed");
      }
    }
    std::cout << absl::StrFormat(
        "speeds       %s of ideal at each speed; worst %.1f%%, longest "
        "iteration %s\n",
        speeds, 100 * m.worst_scaled_throughput_ratio(),
        Millis(m.worst_scaled_iteration_ns()));
  }
  if (m.contention_ns() > 0 || m.uplink_wait_ns() > 0 || m.rank() > 0) {
    std::cout << absl::StrFormat(
        "node         HBM contention %s; transfers %s longer on the shared "
        "uplink; rank %d reported\n",
        Millis(m.contention_ns()), Millis(m.uplink_wait_ns()), m.rank());
  }
  if (m.peak_reserved_bytes() > 0) {
    std::cout << absl::StrFormat(
        "allocator    peak reserved %s (%s held unused at that peak)\n",
        Gigabytes(m.peak_reserved_bytes()), Gigabytes(m.fragmentation_bytes()));
  }
}

}  // namespace slackswap
