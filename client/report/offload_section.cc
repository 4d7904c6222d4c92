// The job's own host traffic (issue 30): ZeRO-Offload and FSDP CPU offload
// share the link with the plan's copies. A plan made without knowing the
// traffic, one made for a link derated by the traffic's average share, and
// SlackSwap planning with it, each replayed with the traffic.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "client/report/report_internal.h"
#include "client/report_text.h"
#include "planner/policies.h"
#include "simulator/event_model.h"
#include "simulator/offload_traffic.h"
#include "simulator/trace_validation.h"
#include "simulator/workload.h"

namespace slackswap {
namespace report_internal {
namespace {

// The traffic's average share of each direction's link over the ideal
// iteration, and the hardware with both links derated by it (to at least
// 5% of their speed).
Hardware Derated(const Trace& trace, const Hardware& hw, double* d2h_share,
                 double* h2d_share) {
  double bytes[2] = {0, 0};
  for (const FixedTransfer& x : trace.fixed_transfers)
    bytes[x.direction == Direction::kD2H] += static_cast<double>(x.size_bytes);
  const double seconds = static_cast<double>(trace.ideal_ns) / 1e9;
  *h2d_share =
      bytes[0] / (static_cast<double>(hw.h2d_bytes_per_second) * seconds);
  *d2h_share =
      bytes[1] / (static_cast<double>(hw.d2h_bytes_per_second) * seconds);
  Hardware derated = hw;
  auto derate = [](int64_t bandwidth, double share) {
    return static_cast<int64_t>(static_cast<double>(bandwidth) *
                                std::max(0.05, 1 - share));
  };
  derated.d2h_bytes_per_second = derate(hw.d2h_bytes_per_second, *d2h_share);
  derated.h2d_bytes_per_second = derate(hw.h2d_bytes_per_second, *h2d_share);
  return derated;
}

double PercentOfIdeal(const Trace& trace, const SimulationResult& r) {
  return 100.0 * static_cast<double>(trace.ideal_ns) /
         static_cast<double>(r.iteration_ns);
}

// "93.9%", or what the replay was stuck waiting for: with the traffic's
// memory beside the plan's, the budget does not fit.
std::string Outcome(const Trace& trace, const SimulationResult& r) {
  if (r.feasible) return absl::StrFormat("%.1f%%", PercentOfIdeal(trace, r));
  switch (r.infeasibility.waiting_for) {
    case WaitCause::kMemory:
      return "stuck: memory";
    case WaitCause::kFixedTransfer:
      return "stuck: a fixed transfer";
    case WaitCause::kPrefetch:
      return "stuck: a prefetch";
    default:
      return "stuck";
  }
}

std::string Ms(int64_t ns) {
  return absl::StrFormat("%.1f", static_cast<double>(ns) / 1e6);
}

}  // namespace

absl::Status Report::OffloadTraffic() {
  absl::StrAppend(&md_, report_text::kOffloadIntro);
  int rows = 0, blind_failed = 0, derated_failed = 0, aware_best = 0;
  double worst_gap = 0;
  for (const std::string preset : {"gpt2-xl", "llama-7b"}) {
    for (const std::string gpu : {"a100", "h100"}) {
      const Hardware hw = *HardwarePreset(gpu);
      for (Offload offload :
           {Offload::kZero, Offload::kZeroDpu, Offload::kFsdpCpu}) {
        SLACKSWAP_ASSIGN_OR_RETURN(WorkloadSpec spec, WorkloadPreset(preset));
        SLACKSWAP_ASSIGN_OR_RETURN(const TraceSpec plain_spec,
                                   GenerateTrace(spec, hw));
        spec.offload = offload;
        SLACKSWAP_ASSIGN_OR_RETURN(const TraceSpec traffic_spec,
                                   GenerateTrace(spec, hw));
        SLACKSWAP_ASSIGN_OR_RETURN(const Trace plain,
                                   ValidateTrace(plain_spec));
        SLACKSWAP_ASSIGN_OR_RETURN(const Trace traffic,
                                   ValidateTrace(traffic_spec));
        double d2h_share = 0, h2d_share = 0;
        const Hardware derated = Derated(traffic, hw, &d2h_share, &h2d_share);
        for (int percent : {30, 50}) {
          const int64_t budget = AllKeepPeakBytes(traffic) * percent / 100;
          SimulationOptions sim;
          sim.budget_bytes = budget;
          // (a) and (b): planned on the trace without the traffic (its
          // memory too), replayed with it.
          SLACKSWAP_ASSIGN_OR_RETURN(
              const PlanningResult blind,
              RunPolicyWithinBudget(Policy::kSlackSwap, plain, hw, budget,
                                    policy_options_));
          SLACKSWAP_ASSIGN_OR_RETURN(
              const PlanningResult slow,
              RunPolicyWithinBudget(Policy::kSlackSwap, plain, derated, budget,
                                    policy_options_));
          SLACKSWAP_ASSIGN_OR_RETURN(
              const PlanningResult aware,
              RunPolicyWithinBudget(Policy::kSlackSwap, traffic, hw, budget,
                                    policy_options_));
          std::string a = "no plan", b = "no plan", c = "no plan";
          SimulationResult ra, rb;
          if (blind.feasible) {
            SLACKSWAP_ASSIGN_OR_RETURN(ra,
                                       Simulate(traffic, hw, blind.plan, sim));
            a = absl::StrFormat("%.1f%% → %s",
                                PercentOfIdeal(plain, blind.replay),
                                Outcome(traffic, ra));
          }
          if (slow.feasible) {
            SLACKSWAP_ASSIGN_OR_RETURN(rb,
                                       Simulate(traffic, hw, slow.plan, sim));
            b = Outcome(traffic, rb);
          }
          blind_failed += !blind.feasible || !ra.feasible;
          derated_failed += !slow.feasible || !rb.feasible;
          std::string stalls, gap;
          if (aware.feasible) {
            const SimulationResult& r = aware.replay;
            c = Outcome(traffic, r);
            stalls = absl::StrCat(
                Ms(r.fixed_transfer_wait_ns), " / ", Ms(r.prefetch_wait_ns),
                " / ", Ms(r.memory_wait_ns), " / ", Ms(r.recompute_ns));
            const double g =
                static_cast<double>(r.iteration_ns) /
                    static_cast<double>(aware.lower_bound.iteration_ns) -
                1;
            worst_gap = std::max(worst_gap, g);
            gap = absl::StrFormat("%.2f%%", 100 * g);
            const bool beats_a =
                !ra.feasible || r.iteration_ns <= ra.iteration_ns;
            const bool beats_b =
                !rb.feasible || r.iteration_ns <= rb.iteration_ns;
            aware_best += beats_a && beats_b;
          }
          ++rows;
          absl::StrAppend(
              &md_,
              absl::StrFormat(
                  "| %s | %s | %d%% | %s | %.0f%% / %.0f%% | %s | %s | %s | "
                  "%s | %s |\n",
                  preset, gpu, percent, OffloadName(offload), 100 * h2d_share,
                  100 * d2h_share, a, b, c, stalls, gap));
        }
      }
    }
  }
  absl::StrAppend(
      &md_,
      absl::StrFormat(
          "\n%d rows. Without knowing the traffic, %d plans fail when "
          "replayed with it; for the derated link, %d. The traffic-aware plan "
          "is at least as fast as both in %d rows, and at most %.2f%% above "
          "its lower bound.\n\n",
          rows, blind_failed, derated_failed, aware_best, 100 * worst_gap));
  absl::StrAppend(&md_, report_text::kOffloadLeftOut);
  return absl::OkStatus();
}

}  // namespace report_internal
}  // namespace slackswap
