// File: timeline_checks.h
//
// The invariants that tie a completed replay's timeline to its metrics
// (docs/event-model.md, "Streams", "Stall accounting", "Outputs"), for the
// property tests over random plans, with or without fixed transfers and
// node physics.
#ifndef SLACKSWAP_TESTS_SIMULATOR_TIMELINE_CHECKS_H_
#define SLACKSWAP_TESTS_SIMULATOR_TIMELINE_CHECKS_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "simulator/event_model.h"
#include "simulator/plan.h"
#include "simulator/schedule.h"
#include "simulator/trace.h"

namespace slackswap::testing {

// Each fixed transfer of `trace` appears once in `r`'s timeline, starting
// after its after_op has ended and, with a before_op, ending by that op's
// start.
inline void CheckFixedTransferWindows(const Trace& trace,
                                      const SimulationResult& r) {
  std::vector<int64_t> op_start(trace.ops.size(), -1),
      op_end(trace.ops.size(), -1);
  std::vector<const TimelineEvent*> fixed(trace.fixed_transfers.size());
  for (const TimelineEvent& e : r.timeline) {
    if (e.kind == TimelineKind::kOp) {
      op_start[e.index] = e.start_ns;
      op_end[e.index] = e.end_ns;
    } else if (e.kind == TimelineKind::kFixedTransfer) {
      ASSERT_GE(e.index, 0);
      ASSERT_LT(e.index, trace.num_fixed_transfers());
      ASSERT_EQ(fixed[e.index], nullptr)
          << "fixed transfer " << e.index << " runs twice";
      fixed[e.index] = &e;
    }
  }
  for (int32_t f = 0; f < trace.num_fixed_transfers(); ++f) {
    SCOPED_TRACE(::testing::Message() << "fixed transfer " << f);
    const FixedTransfer& x = trace.fixed_transfers[f];
    ASSERT_NE(fixed[f], nullptr) << "never runs";
    if (x.after_op >= 0) {
      ASSERT_GE(op_end[x.after_op], 0);
      EXPECT_GE(fixed[f]->start_ns, op_end[x.after_op])
          << "starts before its after_op ends";
    }
    if (x.before_op >= 0) {
      ASSERT_GE(op_start[x.before_op], 0);
      EXPECT_LE(fixed[f]->end_ns, op_start[x.before_op])
          << "ends after its before_op starts";
    }
  }
}

// Checks `r`, a feasible replay of `plan` on `trace` with its timeline
// recorded: every event within the budget; the compute stream and each copy
// stream one thing at a time, the copy streams in the schedule's order (a
// fixed transfer f as item num_tensors + f); an offload after its producer,
// a prefetch after its offload and issue point, a backward op after the
// prefetches it reads, each fixed transfer exactly once, after its after_op
// and before its before_op; the busy times and the stalls of each cause
// adding up to their metrics; and the iteration accounted for to the ns:
// ops (with their contention) + rebuilds + stalls, ending with the last
// event.
inline void CheckTimeline(const Trace& trace, const Plan& plan,
                          const SimulationResult& r) {
  const Schedule s = DeriveSchedule(trace, plan);
  const int32_t num_tensors = trace.num_tensors();
  int64_t op_ns = 0, rebuild_ns = 0, d2h_ns = 0, h2d_ns = 0, compute_end = 0;
  int64_t d2h_end = 0, h2d_end = 0, last_end = 0;
  std::vector<int32_t> offloads, prefetches;
  std::vector<int64_t> op_start(trace.ops.size(), -1),
      op_end(trace.ops.size(), -1);
  std::vector<int64_t> prefetch_end(trace.tensors.size(), -1);
  std::vector<int64_t> offload_end(trace.tensors.size(), -1);
  int64_t stall_ns[5] = {0, 0, 0, 0, 0};  // by WaitCause
  for (const TimelineEvent& e : r.timeline) {
    ASSERT_LE(e.resident_bytes, r.budget_bytes);
    ASSERT_LE(e.start_ns, e.end_ns);
    last_end = std::max(last_end, e.end_ns);
    switch (e.kind) {
      case TimelineKind::kOp:
      case TimelineKind::kRebuild:
        ASSERT_GE(e.start_ns, compute_end) << "compute steps overlap";
        compute_end = e.end_ns;
        if (e.kind == TimelineKind::kOp) {
          op_ns += e.end_ns - e.start_ns;
          op_start[e.index] = e.start_ns;
          op_end[e.index] = e.end_ns;
          // A backward op reading a swapped tensor starts after its prefetch.
          for (int32_t t : trace.reads.Row(e.index)) {
            if (plan.decisions[t] == Decision::kSwap &&
                e.index >= trace.num_forward_ops) {
              ASSERT_GE(prefetch_end[t], 0);
              ASSERT_LE(prefetch_end[t], e.start_ns);
            }
          }
        } else {
          rebuild_ns += e.end_ns - e.start_ns;
        }
        break;
      case TimelineKind::kOffload:
        ASSERT_GE(e.start_ns, d2h_end) << "offloads overlap";
        ASSERT_GE(e.start_ns, op_end[trace.tensors[e.index].producer_op]);
        d2h_end = e.end_ns;
        offload_end[e.index] = e.end_ns;
        d2h_ns += e.end_ns - e.start_ns;
        offloads.push_back(e.index);
        break;
      case TimelineKind::kStall:
        // The compute stream was idle then: after its last step, before the
        // next one.
        ASSERT_GE(e.start_ns, compute_end) << "a stall overlaps compute";
        ASSERT_LT(e.start_ns, e.end_ns);
        ASSERT_LE(static_cast<int>(e.cause), 4);
        stall_ns[static_cast<int>(e.cause)] += e.end_ns - e.start_ns;
        break;
      case TimelineKind::kPrefetch: {
        ASSERT_GE(e.start_ns, h2d_end) << "prefetches overlap";
        ASSERT_GE(e.start_ns, offload_end[e.index]);
        const int32_t issue = plan.prefetch_issue_op[e.index];
        ASSERT_GE(e.start_ns, op_end[issue - 1])
            << "prefetch before its issue point";
        h2d_end = e.end_ns;
        prefetch_end[e.index] = e.end_ns;
        h2d_ns += e.end_ns - e.start_ns;
        prefetches.push_back(e.index);
        break;
      }
      case TimelineKind::kFixedTransfer: {
        ASSERT_GE(e.index, 0);
        ASSERT_LT(e.index, trace.num_fixed_transfers());
        const bool d2h =
            trace.fixed_transfers[e.index].direction == Direction::kD2H;
        int64_t& stream_end = d2h ? d2h_end : h2d_end;
        ASSERT_GE(e.start_ns, stream_end)
            << (d2h ? "D2H" : "H2D") << " transfers overlap";
        stream_end = e.end_ns;
        (d2h ? d2h_ns : h2d_ns) += e.end_ns - e.start_ns;
        (d2h ? offloads : prefetches).push_back(num_tensors + e.index);
        break;
      }
    }
  }
  CheckFixedTransferWindows(trace, r);
  EXPECT_EQ(op_ns, trace.ideal_ns + r.contention_ns);
  EXPECT_EQ(rebuild_ns, r.recompute_ns);
  EXPECT_EQ(d2h_ns, r.d2h_busy_ns);
  EXPECT_EQ(h2d_ns, r.h2d_busy_ns);
  // The iteration ends with its last event: the last step, or the wait for
  // the fixed transfers that outlast it.
  EXPECT_LE(compute_end, r.iteration_ns);
  EXPECT_EQ(last_end, r.iteration_ns);
  if (trace.fixed_transfers.empty()) {
    EXPECT_EQ(compute_end, r.iteration_ns);
  }
  EXPECT_EQ(offloads, s.offload_order);
  EXPECT_EQ(prefetches, s.prefetch_order);
  // The compute stream is always running or stalled, and each stall has one
  // cause.
  EXPECT_EQ(r.iteration_ns,
            r.ideal_ns + r.contention_ns + r.recompute_ns + r.stall_ns());
  // The stall slices are the waits, cause by cause.
  EXPECT_EQ(stall_ns[static_cast<int>(WaitCause::kNone)], 0);
  EXPECT_EQ(stall_ns[static_cast<int>(WaitCause::kPrefetch)],
            r.prefetch_wait_ns);
  EXPECT_EQ(stall_ns[static_cast<int>(WaitCause::kMemory)], r.memory_wait_ns);
  EXPECT_EQ(stall_ns[static_cast<int>(WaitCause::kBarrier)], r.barrier_wait_ns);
  EXPECT_EQ(stall_ns[static_cast<int>(WaitCause::kFixedTransfer)],
            r.fixed_transfer_wait_ns);
  EXPECT_LE(r.peak_resident_bytes, r.budget_bytes);
  EXPECT_EQ(r.forward_end_ns, op_end[trace.num_forward_ops - 1]);
}

}  // namespace slackswap::testing

#endif  // SLACKSWAP_TESTS_SIMULATOR_TIMELINE_CHECKS_H_
