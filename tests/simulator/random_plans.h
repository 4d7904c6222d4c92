// Random valid plans and small generated workloads for property tests.
#ifndef SLACKSWAP_TESTS_SIMULATOR_RANDOM_PLANS_H_
#define SLACKSWAP_TESTS_SIMULATOR_RANDOM_PLANS_H_

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "simulator/hardware.h"
#include "simulator/medium_traces.h"
#include "simulator/plan.h"
#include "simulator/schedule.h"
#include "simulator/small_traces.h"
#include "simulator/speed_scaling.h"
#include "simulator/splitmix.h"
#include "simulator/trace.h"
#include "simulator/trace_spec.h"
#include "simulator/trace_validation.h"
#include "simulator/workload.h"

namespace slackswap::testing {

// A random valid plan: each tensor keeps, swaps or recomputes where allowed;
// each swap's issue point is drawn from its valid window.
inline Plan RandomPlan(const Trace& trace, bool barriers,
                       std::mt19937_64& rng) {
  Plan plan = Plan::AllKeep(trace);
  std::uniform_int_distribution<int> pick(0, 2);
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    const int choice = pick(rng);
    if (choice == 1 && !trace.tensors[t].swap_forbidden)
      plan.decisions[t] = Decision::kSwap;
    if (choice == 2 && !trace.tensors[t].recompute_forbidden) {
      plan.decisions[t] = Decision::kRecompute;
    }
  }
  const std::vector<int32_t> need = DeriveNeeds(trace, plan.decisions);
  const std::vector<int32_t> run_start = BlockRunStarts(trace);
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    if (plan.decisions[t] != Decision::kSwap) continue;
    const int32_t earliest = trace.tensors[t].last_forward_use + 1;
    const int32_t latest = barriers ? run_start[need[t]] : need[t];
    plan.prefetch_issue_op[t] =
        std::uniform_int_distribution<int32_t>(earliest, latest)(rng);
  }
  return plan;
}

// `ranks` GPUs behind one uplink as fast as one GPU's link.
inline Hardware SharedUplink(Hardware hw, int ranks) {
  hw.gpus_per_uplink = ranks;
  hw.uplink_d2h_bytes_per_second = hw.d2h_bytes_per_second;
  hw.uplink_h2d_bytes_per_second = hw.h2d_bytes_per_second;
  return hw;
}

// Adds 0-6 random valid fixed transfers (trace.h) to `spec`, which must
// have an operator: both directions; sizes from 1/4 to 4 times a random
// tensor's (now and then 0 bytes); after_op and before_op anywhere they are
// valid, each now and then unset; GPU bytes 0 about a third of the time,
// else the size or a size of their own; an H2D copy holding bytes released
// after an op in [before_op, ops), often before_op itself.
inline void AddRandomFixedTransfers(TraceSpec& spec, SplitMix64& rng) {
  const auto ops = static_cast<int32_t>(spec.operators.size());
  const auto tensors = static_cast<int64_t>(spec.tensors.size());
  auto comparable = [&] {
    const int64_t base =
        tensors == 0 ? 1 << 20
                     : std::max<int64_t>(
                           1, spec.tensors[rng.Int(0, tensors - 1)].size_bytes);
    return static_cast<int64_t>(static_cast<double>(base) *
                                std::exp((rng.Unit() - 0.5) * std::log(16.0)));
  };
  const int count = static_cast<int>(rng.Int(0, 6));
  for (int i = 0; i < count; ++i) {
    FixedTransferSpec& x = spec.fixed_transfers.emplace_back();
    x.name = absl::StrCat("fixed", i);
    x.direction = rng.Chance(50) ? Direction::kD2H : Direction::kH2D;
    const bool d2h = x.direction == Direction::kD2H;
    x.size_bytes = rng.Chance(5) ? 0 : comparable();
    if (!rng.Chance(35))
      x.gpu_bytes = rng.Chance(70) ? x.size_bytes : 1 + comparable();
    // An H2D copy that holds bytes needs an op after its after_op to read it.
    if (!d2h && ops < 2) x.gpu_bytes = 0;
    const bool holds = x.gpu_bytes > 0;
    if (d2h && holds) {
      x.after_op = static_cast<int32_t>(rng.Int(0, ops - 1));
    } else if (!rng.Chance(25)) {
      const int32_t last = !d2h && holds ? ops - 2 : ops - 1;
      x.after_op = static_cast<int32_t>(rng.Int(0, last));
    }
    const int32_t first = x.after_op + 1;
    if (first < ops && ((!d2h && holds) || !rng.Chance(30)))
      x.before_op = static_cast<int32_t>(rng.Int(first, ops - 1));
    if (!d2h && holds) {
      x.release_op = rng.Chance(40)
                         ? x.before_op
                         : static_cast<int32_t>(rng.Int(x.before_op, ops - 1));
    }
  }
}

struct Workload {
  std::string name;
  Trace trace;
  Hardware hardware;
};

// Every preset, cut to at most `max_layers` layers, on each of `gpus`; with
// a `fixed_seed`, each carries random fixed transfers drawn from it
// (AddRandomFixedTransfers).
inline std::vector<Workload> SmallWorkloads(
    int max_layers, const std::vector<std::string>& gpus,
    uint64_t fixed_seed = 0) {
  SplitMix64 fixed_rng(fixed_seed);
  std::vector<Workload> out;
  for (const std::string& preset : WorkloadPresetNames()) {
    for (const std::string& gpu : gpus) {
      WorkloadSpec spec = *WorkloadPreset(preset);
      spec.layers = std::min(spec.layers, max_layers);
      if (preset == "bert-large")
        spec.flash_attention = false;  // cover unfused attention
      const Hardware hw = *HardwarePreset(gpu);
      absl::StatusOr<TraceSpec> generated = GenerateTrace(spec, hw);
      EXPECT_TRUE(generated.ok()) << generated.status();
      if (fixed_seed != 0) AddRandomFixedTransfers(*generated, fixed_rng);
      out.push_back(
          {absl::StrCat(preset, "/", gpu), *ValidateTrace(*generated), hw});
    }
  }
  return out;
}

// SmallWorkloads(2, gpus), then `small` random small traces (every
// `fixed_every`-th carrying random fixed transfers drawn from `seed`) and
// `medium` random medium chains, branched blocks and DAGs in turn, of 20 to
// `max_medium_tensors` tensors (seeds seed + 1, seed + 2, ...).
inline std::vector<Workload> MixedWorkloads(
    uint64_t seed, const std::vector<std::string>& gpus, int small,
    int fixed_every, int medium, int32_t max_medium_tensors) {
  std::vector<Workload> out = SmallWorkloads(2, gpus);
  SplitMix64 rng(seed);
  for (int i = 1; i <= small; ++i) {
    SmallTrace drawn = RandomSmallTrace(static_cast<uint64_t>(i), {2, 12, 10});
    if (i % fixed_every == 0) AddRandomFixedTransfers(drawn.trace, rng);
    absl::StatusOr<Trace> trace = ValidateTrace(drawn.trace);
    EXPECT_TRUE(trace.ok()) << "seed " << i << ": " << trace.status();
    if (!trace.ok()) continue;
    out.push_back(
        {absl::StrCat("random-", i), *std::move(trace), drawn.hardware});
  }
  for (int i = 1; i <= medium; ++i) {
    MediumTraceOptions options;
    options.shape = static_cast<MediumShape>(i % 3);
    options.max_tensors = max_medium_tensors;
    const MediumTrace drawn = RandomMediumTrace(seed + i, options);
    absl::StatusOr<Trace> trace = ValidateTrace(drawn.trace);
    EXPECT_TRUE(trace.ok()) << "medium " << i << ": " << trace.status();
    if (!trace.ok()) continue;
    out.push_back(
        {absl::StrCat("medium-", i), *std::move(trace), drawn.hardware});
  }
  return out;
}

// The trace and hardware at random speeds: every op and rebuild duration
// times a factor in [0, 10] (its own, or one for all; now and then 0), each
// link direction times one in [0.1, 10] or infinite, the latency sometimes 0.
struct RandomSpeeds {
  Trace trace;
  Hardware hardware;
  std::string description;
};

inline RandomSpeeds RandomlyScaled(const Trace& trace, const Hardware& hardware,
                                   std::mt19937_64& rng) {
  std::uniform_real_distribution<double> kernel(0.0, 10.0);
  std::uniform_real_distribution<double> link_log(std::log(0.1),
                                                  std::log(10.0));
  std::vector<double> op_factors(trace.ops.size());
  std::vector<double> rebuild_factors(trace.tensors.size());
  // Some sweeps scale everything alike, some each duration on its own; a
  // factor of 0 (an op that takes no time) now and then.
  const bool alike = rng() % 4 == 0;
  const double common = kernel(rng);
  auto draw = [&] {
    if (rng() % 16 == 0) return 0.0;
    return alike ? common : kernel(rng);
  };
  for (double& f : op_factors) f = draw();
  for (double& f : rebuild_factors) f = draw();
  auto link = [&] {
    return rng() % 5 == 0 ? std::numeric_limits<double>::infinity()
                          : std::exp(link_log(rng));
  };
  const double d2h = link(), h2d = link();
  RandomSpeeds out{*ScaleDurations(trace, op_factors, rebuild_factors),
                   ScaleLinks(hardware, d2h, h2d),
                   absl::StrCat("d2h x", d2h, ", h2d x", h2d,
                                alike ? ", kernels alike" : ", kernels apart")};
  if (rng() % 3 == 0) out.hardware.transfer_latency_ns = 0;
  return out;
}

}  // namespace slackswap::testing

#endif  // SLACKSWAP_TESTS_SIMULATOR_RANDOM_PLANS_H_
