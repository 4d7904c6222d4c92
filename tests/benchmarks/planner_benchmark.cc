// Benchmarks of the SlackSwap planner: both passes plus validation and repair
// (target: under 5 ms for GPT-2 XL, BERT-Large and Llama-7B at 30% and 50% of
// peak), and its growth with trace size (GPT-2 XL with 1x to 50x the layers;
// target: the 50x trace under 0.5 s, growth near n log n).
// scripts/benchmarks.sh runs this and writes docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <tuple>

#include "planner/lower_bound.h"
#include "planner/lp_bound.h"
#include "planner/node_planner.h"
#include "planner/policies.h"
#include "planner/slackswap.h"
#include "service/wire_convert.h"
#include "simulator/event_model.h"
#include "simulator/medium_traces.h"
#include "simulator/offload_traffic.h"
#include "simulator/trace_validation.h"
#include "simulator/workload.h"
#include "tests/planner/shaped_traces.h"

namespace slackswap {
namespace {

struct Workload {
  Trace trace;
  Hardware hardware;
  int64_t peak_bytes = 0;
};

// Generated once per (preset, layers, offload) and kept for the process.
const Workload& Get(const std::string& preset, int32_t layers = 0,
                    Offload offload = Offload::kNone) {
  static auto* cache =
      new std::map<std::tuple<std::string, int32_t, Offload>, Workload>();
  auto it = cache->find({preset, layers, offload});
  if (it == cache->end()) {
    Workload w;
    w.hardware = *HardwarePreset("a100");
    WorkloadSpec spec = *WorkloadPreset(preset);
    if (layers > 0) spec.layers = layers;
    spec.offload = offload;
    w.trace = *ValidateTrace(*GenerateTrace(spec, w.hardware));
    w.peak_bytes = AllKeepPeakBytes(w.trace);
    it = cache->emplace(std::make_tuple(preset, layers, offload), std::move(w))
             .first;
  }
  return it->second;
}

void Plan(benchmark::State& state, const Workload& w, double fraction) {
  const int64_t budget =
      static_cast<int64_t>(fraction * static_cast<double>(w.peak_bytes));
  for (auto _ : state) {
    absl::StatusOr<PlanningResult> r =
        PlanSlackSwap(w.trace, w.hardware, budget, PlannerOptions());
    if (!r.ok() || !r->feasible) state.SkipWithError("no plan");
    benchmark::DoNotOptimize(r);
  }
  state.counters["ops"] = w.trace.num_ops();
  state.counters["tensors"] = w.trace.num_tensors();
}

void BM_PlanGpt2Xl50(benchmark::State& s) { Plan(s, Get("gpt2-xl"), 0.5); }
void BM_PlanGpt2Xl30(benchmark::State& s) { Plan(s, Get("gpt2-xl"), 0.3); }
void BM_PlanBertLarge50(benchmark::State& s) {
  Plan(s, Get("bert-large"), 0.5);
}
void BM_PlanBertLarge30(benchmark::State& s) {
  Plan(s, Get("bert-large"), 0.3);
}
void BM_PlanLlama7b50(benchmark::State& s) { Plan(s, Get("llama-7b"), 0.5); }
void BM_PlanLlama7b30(benchmark::State& s) { Plan(s, Get("llama-7b"), 0.3); }
BENCHMARK(BM_PlanGpt2Xl50)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlanGpt2Xl30)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlanBertLarge50)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlanBertLarge30)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlanLlama7b50)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlanLlama7b30)->Unit(benchmark::kMillisecond);

// The job's own host traffic (issue 30; target: GPT-2 XL with FSDP CPU
// offload, one unit per layer, under 10 ms), with the anytime search as by
// default and without it (the passes, validation and repair alone).
void PlanOffloading(benchmark::State& state, Offload offload, bool search) {
  const Workload& w = Get("gpt2-xl", 0, offload);
  PlannerOptions options;
  if (!search) options.search_time_ms = 0;
  for (auto _ : state) {
    absl::StatusOr<PlanningResult> r =
        PlanSlackSwap(w.trace, w.hardware, w.peak_bytes / 2, options);
    if (!r.ok() || !r->feasible) state.SkipWithError("no plan");
    benchmark::DoNotOptimize(r);
  }
}
void BM_PlanGpt2Xl50FsdpCpu(benchmark::State& s) {
  PlanOffloading(s, Offload::kFsdpCpu, true);
}
void BM_PlanGpt2Xl50FsdpCpuNoSearch(benchmark::State& s) {
  PlanOffloading(s, Offload::kFsdpCpu, false);
}
void BM_PlanGpt2Xl50Zero(benchmark::State& s) {
  PlanOffloading(s, Offload::kZero, true);
}
void BM_PlanGpt2Xl50ZeroDpu(benchmark::State& s) {
  PlanOffloading(s, Offload::kZeroDpu, true);
}
BENCHMARK(BM_PlanGpt2Xl50FsdpCpu)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlanGpt2Xl50FsdpCpuNoSearch)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlanGpt2Xl50Zero)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlanGpt2Xl50ZeroDpu)->Unit(benchmark::kMillisecond);

// Node physics (issue 17; targets: GPT-2 XL with all three on under 5 ms,
// a 4-job node under 50 ms; docs/benchmarks.md gives each as a ratio to
// BM_PlanGpt2Xl50 of the same run). "All three": 2 GPUs behind a 25 GB/s
// uplink, HBM contention, and the caching allocator observed.
Hardware SharedA100() {
  Hardware h = *HardwarePreset("a100");
  h.gpus_per_uplink = 2;
  h.uplink_d2h_bytes_per_second = 25'000'000'000;
  h.uplink_h2d_bytes_per_second = 25'000'000'000;
  return h;
}

void PlanWithPhysics(benchmark::State& state, bool budget_reserved) {
  const Workload& w = Get("gpt2-xl");
  const Hardware hw = SharedA100();
  PolicyOptions options;
  options.physics.hbm_contention = true;
  options.physics.allocator = AllocatorKind::kCaching;
  options.physics.budget_reserved = budget_reserved;
  const int64_t budget = w.peak_bytes / 2;
  for (auto _ : state) {
    absl::StatusOr<PlanningResult> r =
        RunPolicyWithinBudget(Policy::kSlackSwap, w.trace, hw, budget, options);
    if (!r.ok() || !r->feasible) state.SkipWithError("no plan");
    benchmark::DoNotOptimize(r);
  }
}
void BM_PlanGpt2Xl50NodePhysics(benchmark::State& state) {
  PlanWithPhysics(state, /*budget_reserved=*/false);
}
BENCHMARK(BM_PlanGpt2Xl50NodePhysics)->Unit(benchmark::kMillisecond);
// The same with the budget on reserved bytes (the planner may plan again).
void BM_PlanGpt2Xl50ReservedBudget(benchmark::State& state) {
  PlanWithPhysics(state, /*budget_reserved=*/true);
}
BENCHMARK(BM_PlanGpt2Xl50ReservedBudget)->Unit(benchmark::kMillisecond);

// Four jobs (GPT-2 XL, BERT-Large, Llama-7B, GPT-2 XL at 30%; 2 GPUs each)
// on a node whose 8 GPUs share one 25 GB/s uplink, 4 steps each.
void BM_PlanNodeFourJobs(benchmark::State& state) {
  Hardware node = SharedA100();
  std::vector<NodePlanJob> jobs;
  for (auto [preset, fraction] :
       {std::make_pair("gpt2-xl", 0.5), std::make_pair("bert-large", 0.5),
        std::make_pair("llama-7b", 0.5), std::make_pair("gpt2-xl", 0.3)}) {
    const Workload& w = Get(preset);
    NodePlanJob job;
    job.trace = &w.trace;
    job.budget_bytes =
        static_cast<int64_t>(fraction * static_cast<double>(w.peak_bytes));
    job.gpus = 2;
    jobs.push_back(job);
  }
  for (auto _ : state) {
    absl::StatusOr<NodePlan> r = PlanNode(jobs, node, PolicyOptions(), 4);
    if (!r.ok()) state.SkipWithError("no node plan");
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_PlanNodeFourJobs)->Unit(benchmark::kMillisecond);

// The anytime search at its default limits: 300-tensor medium traces (a
// chain, branched blocks, a DAG; simulator/medium_traces.h) at 2% above
// their proven floor, where the passes are far from the bound and the search
// runs to its limit (target: under 200 ms).
void PlanMedium300(benchmark::State& state, int search_threads) {
  MediumTraceOptions options;
  options.shape = static_cast<MediumShape>(state.range(0));
  options.min_tensors = options.max_tensors = 300;
  const MediumTrace medium = RandomMediumTrace(1, options);
  const Trace trace = *ValidateTrace(medium.trace);
  const int64_t floor = ComputeProvenFloor(trace).bytes;
  const int64_t budget = floor + (AllKeepPeakBytes(trace) - floor) / 50;
  int64_t replays = 0;
  PlannerOptions planner;
  planner.search_threads = search_threads;
  for (auto _ : state) {
    absl::StatusOr<PlanningResult> r =
        PlanSlackSwap(trace, medium.hardware, budget, planner);
    if (!r.ok()) state.SkipWithError("planning failed");
    replays = r->stats.search_replays;
    benchmark::DoNotOptimize(r);
  }
  state.counters["tensors"] = trace.num_tensors();
  state.counters["search_replays"] = static_cast<double>(replays);
}
void BM_PlanMedium300(benchmark::State& state) {
  PlanMedium300(state, PlannerOptions().search_threads);
}
// The same search on one thread (the same plan): the threads' speedup.
void BM_PlanMedium300OneThread(benchmark::State& state) {
  PlanMedium300(state, 1);
}
BENCHMARK(BM_PlanMedium300)
    ->Arg(static_cast<int>(MediumShape::kChain))
    ->Arg(static_cast<int>(MediumShape::kBranches))
    ->Arg(static_cast<int>(MediumShape::kDag))
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlanMedium300OneThread)
    ->Arg(static_cast<int>(MediumShape::kChain))
    ->Arg(static_cast<int>(MediumShape::kBranches))
    ->Arg(static_cast<int>(MediumShape::kDag))
    ->Unit(benchmark::kMillisecond);

// The linear-program bound alone (target: GPT-2 XL within 50 ms).
void LinearProgram(benchmark::State& state, const Workload& w,
                   double fraction) {
  const int64_t budget =
      static_cast<int64_t>(fraction * static_cast<double>(w.peak_bytes));
  for (auto _ : state) {
    const LinearProgramBound lp =
        ComputeLinearProgramBound(w.trace, w.hardware, budget);
    if (!lp.solved) state.SkipWithError("no optimum");
    benchmark::DoNotOptimize(lp);
  }
  state.counters["ops"] = w.trace.num_ops();
  state.counters["tensors"] = w.trace.num_tensors();
}
void BM_LinearProgramBoundGpt2Xl30(benchmark::State& s) {
  LinearProgram(s, Get("gpt2-xl"), 0.3);
}
void BM_LinearProgramBoundGpt2Xl50(benchmark::State& s) {
  LinearProgram(s, Get("gpt2-xl"), 0.5);
}
BENCHMARK(BM_LinearProgramBoundGpt2Xl30)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LinearProgramBoundGpt2Xl50)->Unit(benchmark::kMillisecond);

// GPT-2 XL with range(0) times its 48 layers, at 50% of peak.
void BM_PlanScaling(benchmark::State& state) {
  Plan(state, Get("gpt2-xl", static_cast<int32_t>(48 * state.range(0))), 0.5);
}
BENCHMARK(BM_PlanScaling)
    ->Arg(1)
    ->Arg(2)
    ->Arg(5)
    ->Arg(10)
    ->Arg(20)
    ->Arg(50)
    ->Unit(benchmark::kMillisecond);

// Traces shaped against the recompute pass (tests/planner/shaped_traces.h)
// with range(0) tensors, at 10% of peak on a link too slow to swap: planning
// must stay near n log n whatever the shape (one request with a long chain
// took 29 s at 20,000 tensors).
void PlanShape(benchmark::State& state, const std::string& shape) {
  static auto* cache =
      new std::map<std::pair<std::string, int64_t>, Workload>();
  auto it = cache->find({shape, state.range(0)});
  if (it == cache->end()) {
    Workload w;
    w.hardware = testing::SlowLink();
    w.trace = *ValidateTrace(
        testing::ShapedTrace(shape, static_cast<int>(state.range(0))));
    w.peak_bytes = AllKeepPeakBytes(w.trace);
    it = cache->emplace(std::make_pair(shape, state.range(0)), std::move(w))
             .first;
  }
  const Workload& w = it->second;
  for (auto _ : state) {
    absl::StatusOr<PlanningResult> r =
        PlanSlackSwap(w.trace, w.hardware, w.peak_bytes / 10, PlannerOptions());
    if (!r.ok()) state.SkipWithError("planning failed");
    benchmark::DoNotOptimize(r);
  }
  state.counters["ops"] = w.trace.num_ops();
  state.counters["tensors"] = w.trace.num_tensors();
}
void BM_PlanChain(benchmark::State& s) { PlanShape(s, "chain"); }
void BM_PlanChainBlocks(benchmark::State& s) { PlanShape(s, "chain-blocks"); }
void BM_PlanStar(benchmark::State& s) { PlanShape(s, "star"); }
void BM_PlanDag(benchmark::State& s) { PlanShape(s, "dag"); }
BENCHMARK(BM_PlanChain)
    ->Arg(2000)
    ->Arg(8000)
    ->Arg(32000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlanChainBlocks)
    ->Arg(2000)
    ->Arg(8000)
    ->Arg(32000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlanStar)
    ->Arg(2000)
    ->Arg(8000)
    ->Arg(32000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlanDag)
    ->Arg(2000)
    ->Arg(8000)
    ->Arg(32000)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace slackswap

BENCHMARK_MAIN();
