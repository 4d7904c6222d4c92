// Random valid plans and small generated workloads for property tests.
#ifndef SLACKSWAP_TESTS_SIMULATOR_RANDOM_PLANS_H_
#define SLACKSWAP_TESTS_SIMULATOR_RANDOM_PLANS_H_

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "service/trace_convert.h"
#include "service/wire_convert.h"
#include "simulator/hardware.h"
#include "simulator/plan.h"
#include "simulator/schedule.h"
#include "simulator/trace.h"
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

struct Workload {
  std::string name;
  Trace trace;
  Hardware hardware;
};

// Every preset, cut to at most `max_layers` layers, on each of `gpus`.
inline std::vector<Workload> SmallWorkloads(
    int max_layers, const std::vector<std::string>& gpus) {
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
      out.push_back(
          {absl::StrCat(preset, "/", gpu), *ValidateTrace(*generated), hw});
    }
  }
  return out;
}

}  // namespace slackswap::testing

#endif  // SLACKSWAP_TESTS_SIMULATOR_RANDOM_PLANS_H_
