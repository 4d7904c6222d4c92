#include "planner/traffic_run.h"

#include <algorithm>

#include "absl/status/statusor.h"
#include "simulator/event_model.h"
#include "simulator/plan.h"

namespace slackswap {

TrafficRun RunTrafficAlone(const Trace& trace, const Hardware& hardware) {
  TrafficRun run;
  run.op_start.assign(trace.ops.size(), 0);
  int64_t at = 0;
  for (size_t o = 0; o < trace.ops.size(); ++o) {
    run.op_start[o] = at;
    at += trace.ops[o].duration_ns;
  }
  run.iteration_ns = at;
  if (trace.fixed_transfers.empty()) return run;
  int64_t tail[2] = {0, 0};
  for (const FixedTransfer& x : trace.fixed_transfers) {
    if (x.after_op != trace.num_ops() - 1) continue;
    const bool d2h = x.direction == Direction::kD2H;
    tail[d2h] += TransferNs(
        x.size_bytes,
        d2h ? hardware.d2h_bytes_per_second : hardware.h2d_bytes_per_second,
        hardware.transfer_latency_ns);
  }
  run.tail_ns = std::max(tail[0], tail[1]);
  // No node physics: each copy at the link rate `hardware` gives (the
  // caller's lockstep share, or the GPU's own link when ranks are skewed: a
  // rank may find the uplink to itself).
  Hardware alone = hardware;
  alone.gpus_per_uplink = 1;
  alone.uplink_d2h_bytes_per_second = 0;
  alone.uplink_h2d_bytes_per_second = 0;
  SimulationOptions options;
  options.record_timeline = true;
  const absl::StatusOr<SimulationResult> r =
      Simulate(trace, alone, Plan::AllKeep(trace), options);
  // Unlimited memory: the all-keep plan completes (the profiled starts
  // stand otherwise; they are a bound too).
  if (!r.ok() || !r->feasible) return run;
  run.iteration_ns = r->iteration_ns;
  for (const TimelineEvent& e : r->timeline) {
    if (e.kind == TimelineKind::kOp) run.op_start[e.index] = e.start_ns;
  }
  return run;
}

}  // namespace slackswap
