// File: fingerprints.h
//
// Every field of a replay's result as text, for tests that compare two
// results for equality without the wire format (what MetricsToProto would
// carry, and more: the timeline, the scaled replays and the fields repair
// reads).
#ifndef SLACKSWAP_TESTS_SIMULATOR_FINGERPRINTS_H_
#define SLACKSWAP_TESTS_SIMULATOR_FINGERPRINTS_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "simulator/event_model.h"
#include "simulator/plan.h"

namespace slackswap::testing {

inline std::string Fingerprint(const SimulationResult& r) {
  std::string out = absl::StrCat(
      "feasible ", r.feasible, " cut_off ", r.cut_off, " stopped ", r.stopped,
      " infeasible at ", r.infeasibility.op, "/",
      r.infeasibility.rebuild_tensor, " for ",
      static_cast<int>(r.infeasibility.waiting_for), " needing ",
      r.infeasibility.bytes_needed, " of ", r.infeasibility.bytes_resident,
      " (", r.infeasibility.reason, ")\n");
  absl::StrAppend(&out, "iteration ", r.iteration_ns, " ideal ", r.ideal_ns,
                  " ratio ", r.throughput_ratio, "\n");
  absl::StrAppend(&out, "waits ", r.prefetch_wait_ns, " ", r.memory_wait_ns,
                  " ", r.barrier_wait_ns, " ", r.fixed_transfer_wait_ns,
                  " recompute ", r.recompute_ns, "\n");
  absl::StrAppend(&out, "bytes ", r.swapped_bytes, " ", r.recomputed_bytes, " ",
                  r.kept_bytes, " peak ", r.peak_resident_bytes, " budget ",
                  r.budget_bytes, " reserved ", r.peak_reserved_bytes,
                  " fragmentation ", r.fragmentation_bytes, "\n");
  absl::StrAppend(&out, "node ", r.contention_ns, " ", r.uplink_wait_ns,
                  " rank ", r.rank, " links ", r.d2h_busy_ns, " ",
                  r.h2d_busy_ns, " forward end ", r.forward_end_ns, " lag ",
                  r.last_offload_lag_ns, " held ", r.held_prefetch_op, " ",
                  r.held_prefetch_excess_bytes, "\n");
  // Whether it started from another replay's state, and the states it
  // recorded (resume_points.h): a planner's answer is its replay as
  // Simulate gives it. (Not its events: a replay of ranks in lockstep runs
  // fewer than the loop of ranks it stands for.)
  absl::StrAppend(&out, "resumed ", r.resumed_events, " points ",
                  r.resume_points.size(), "\n");
  for (const TimelineEvent& e : r.timeline) {
    absl::StrAppend(&out, "event ", static_cast<int>(e.kind), " ", e.index, " ",
                    e.start_ns, "-", e.end_ns, " ", e.resident_bytes, " ",
                    static_cast<int>(e.cause), "\n");
  }
  for (const ScaledReplay& s : r.scaled) {
    absl::StrAppend(&out, "scaled ", s.scaling.kernel_time_factor, " ",
                    s.scaling.link_speed_factor, " ", s.replayed, " ",
                    s.feasible, " ", s.iteration_ns, " ", s.throughput_ratio,
                    " ", s.peak_resident_bytes, "\n");
  }
  return out;
}

inline std::string Fingerprint(const Plan& plan) {
  std::string out = "plan";
  for (size_t t = 0; t < plan.decisions.size(); ++t) {
    absl::StrAppend(&out, " ", static_cast<int>(plan.decisions[t]), "@",
                    plan.prefetch_issue_op[t]);
  }
  return out;
}

}  // namespace slackswap::testing

#endif  // SLACKSWAP_TESTS_SIMULATOR_FINGERPRINTS_H_
