// SelectSwaps (pass 1) against a brute force that states its admission rules
// directly (link_budget_pass.h) and checks each candidate from scratch: the
// FIFO of offloads replayed in production order, each ending by its deadline,
// and the prefetches in deadline order, each arriving before its need. The
// pass answers in O(n log n) with segment trees; the brute force takes
// O(n^2) per candidate, and both must admit the same tensors in the same
// order.
#include "planner/link_budget_pass.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "planner/plan_draft.h"
#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/small_traces.h"
#include "simulator/trace_validation.h"
#include "simulator/workload.h"
#include "tests/planner/shaped_traces.h"

namespace slackswap {
namespace {

struct Candidate {
  int32_t tensor = 0;
  int64_t deadline_ns = 0;  // the offload ends by then
};

std::vector<int32_t> BruteForceSelectSwaps(const Trace& trace,
                                           const Hardware& hardware,
                                           const IdealTimeline& timeline,
                                           int64_t budget_bytes,
                                           const PlannerOptions& options) {
  std::vector<int32_t> admitted;
  if (!options.link_budget_pass) return admitted;
  const int32_t num_ops = trace.num_ops();
  // The all-keep run's resident bytes while each operator runs.
  std::vector<int64_t> resident(num_ops, 0);
  for (int32_t o = 0; o < num_ops; ++o) {
    resident[o] = trace.ops[o].workspace_bytes;
    for (const Tensor& t : trace.tensors) {
      if (t.producer_op <= o && o <= t.last_backward_use)
        resident[o] += t.size_bytes;
    }
  }
  // Candidates: swappable, non-empty, and the highest point between the last
  // forward use and the first backward use (the leftmost) is over budget.
  std::vector<Candidate> candidates;
  std::vector<int64_t> deadline(trace.num_tensors(), 0);
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    const Tensor& tensor = trace.tensors[t];
    if (tensor.swap_forbidden || tensor.size_bytes <= 0) continue;
    int32_t at = -1;
    for (int32_t o = tensor.last_forward_use + 1; o < tensor.first_backward_use;
         ++o) {
      if (at < 0 || resident[o] > resident[at]) at = o;
    }
    if (at < 0 || resident[at] <= budget_bytes) continue;
    const int64_t start = timeline.op_start_ns[at];
    deadline[t] = start - static_cast<int64_t>(options.guard_fraction *
                                               static_cast<double>(start));
    candidates.push_back({t, deadline[t]});
  }
  std::vector<int32_t> order;
  for (const Candidate& c : candidates) order.push_back(c.tensor);
  auto production = [&](int32_t a, int32_t b) {
    const int32_t pa = trace.tensors[a].producer_op;
    const int32_t pb = trace.tensors[b].producer_op;
    return pa != pb ? pa < pb : a < b;
  };
  if (options.ranking == SwapRanking::kProductionOrder) {
    std::sort(order.begin(), order.end(), production);
  } else {
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return RecomputeCostPerByte(trace.tensors[a]) >
             RecomputeCostPerByte(trace.tensors[b]);
    });
  }

  // Admissible: every offload of `set` ends by its deadline when the link
  // takes them in production order, each no earlier than its producer's end,
  // and every prefetch, released at the later of the forward pass's end and
  // its offload deadline, arrives before its need with all the prefetches
  // ahead of it in deadline order (first backward use, then id) before it.
  auto admissible = [&](std::vector<int32_t> set) {
    std::sort(set.begin(), set.end(), production);
    int64_t link_free = 0;
    for (int32_t t : set) {
      const Tensor& tensor = trace.tensors[t];
      const int64_t begin =
          std::max(link_free, timeline.End(tensor.producer_op));
      link_free =
          begin + TransferNs(tensor.size_bytes, hardware.d2h_bytes_per_second,
                             hardware.transfer_latency_ns);
      if (link_free > deadline[t]) return false;
    }
    std::sort(set.begin(), set.end(), [&](int32_t a, int32_t b) {
      const int32_t na = trace.tensors[a].first_backward_use;
      const int32_t nb = trace.tensors[b].first_backward_use;
      return na != nb ? na < nb : a < b;
    });
    int64_t ahead = 0;
    for (int32_t t : set) {
      const Tensor& tensor = trace.tensors[t];
      ahead += TransferNs(tensor.size_bytes, hardware.h2d_bytes_per_second,
                          hardware.transfer_latency_ns);
      const int64_t release = std::max(timeline.forward_end_ns, deadline[t]);
      if (release + ahead > timeline.op_start_ns[tensor.first_backward_use])
        return false;
    }
    return true;
  };

  const int64_t wanted =
      std::max<int64_t>(0, AllKeepPeakBytes(trace) - budget_bytes);
  const int64_t cap = hardware.host_pinned_memory_bytes > 0
                          ? hardware.host_pinned_memory_bytes
                          : std::numeric_limits<int64_t>::max();
  int64_t swapped = 0;
  for (int32_t t : order) {
    if (swapped >= wanted) break;
    if (swapped + trace.tensors[t].size_bytes > cap) continue;
    std::vector<int32_t> trial = admitted;
    trial.push_back(t);
    if (!admissible(trial)) continue;
    admitted.push_back(t);
    swapped += trace.tensors[t].size_bytes;
  }
  return admitted;
}

// Both answers for every budget from 5% to 100% of the all-keep peak, both
// rankings and three guards. Returns how many admitted at least one swap.
int ExpectSameSelections(const Trace& trace, const Hardware& hardware) {
  const IdealTimeline timeline(trace);
  const int64_t peak = AllKeepPeakBytes(trace);
  int nonempty = 0;
  for (SwapRanking ranking :
       {SwapRanking::kRecomputeCostPerByte, SwapRanking::kProductionOrder}) {
    for (double guard : {0.0, 0.01, 0.2}) {
      for (int percent = 5; percent <= 100; percent += 5) {
        PlannerOptions options;
        options.ranking = ranking;
        options.guard_fraction = guard;
        const int64_t budget = peak * percent / 100;
        const std::vector<int32_t> fast =
            SelectSwaps(trace, hardware, timeline, budget, options);
        const std::vector<int32_t> brute =
            BruteForceSelectSwaps(trace, hardware, timeline, budget, options);
        EXPECT_EQ(fast, brute) << "budget " << percent << "%, guard " << guard
                               << ", ranking " << static_cast<int>(ranking);
        if (!fast.empty()) ++nonempty;
      }
    }
  }
  return nonempty;
}

TEST(SelectSwapsTest, MatchesTheBruteForceOnRandomSmallTraces) {
  int nonempty = 0;
  for (uint64_t seed = 0; seed < 150; ++seed) {
    SCOPED_TRACE(seed);
    const SmallTrace small = RandomSmallTrace(seed, {6, 14, 12});
    nonempty +=
        ExpectSameSelections(*ValidateTrace(small.trace), small.hardware);
  }
  // The comparison is not vacuous: many runs admit swaps.
  EXPECT_GT(nonempty, 1000);
}

// A host pinned-memory cap skips the swaps that would pass it and goes on.
TEST(SelectSwapsTest, MatchesTheBruteForceUnderAHostCap) {
  int nonempty = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    SCOPED_TRACE(seed);
    SmallTrace small = RandomSmallTrace(seed, {6, 14, 12});
    const Trace trace = *ValidateTrace(small.trace);
    small.hardware.host_pinned_memory_bytes =
        std::max<int64_t>(1, trace.total_tensor_bytes / 3);
    nonempty += ExpectSameSelections(trace, small.hardware);
  }
  EXPECT_GT(nonempty, 100);
}

TEST(SelectSwapsTest, MatchesTheBruteForceOnGeneratedAndShapedTraces) {
  for (const std::string preset : {"gpt2-xl", "llama-7b", "vgg16"}) {
    SCOPED_TRACE(preset);
    WorkloadSpec spec = *WorkloadPreset(preset);
    spec.layers = std::min(spec.layers, 3);
    for (const char* gpu : {"a100", "titan-x"}) {
      const Hardware hardware = *HardwarePreset(gpu);
      EXPECT_GT(ExpectSameSelections(
                    *ValidateTrace(*GenerateTrace(spec, hardware)), hardware),
                0);
    }
  }
  // The shaped traces' 1 MB tensors on a link that moves one in 2.5 us,
  // while each forward operator takes 1 us: the link admits about a third.
  Hardware link = testing::SlowLink();
  link.d2h_bytes_per_second = link.h2d_bytes_per_second = 400'000'000'000;
  for (const std::string shape : {"chain", "star", "dag"}) {
    SCOPED_TRACE(shape);
    EXPECT_GT(ExpectSameSelections(
                  *ValidateTrace(testing::ShapedTrace(shape, 40)), link),
              0);
  }
}

TEST(SelectSwapsTest, TheAblationAdmitsNothing) {
  const SmallTrace small = RandomSmallTrace(4);
  const Trace trace = *ValidateTrace(small.trace);
  PlannerOptions options;
  options.link_budget_pass = false;
  EXPECT_TRUE(
      SelectSwaps(trace, small.hardware, IdealTimeline(trace), 0, options)
          .empty());
}

}  // namespace
}  // namespace slackswap
