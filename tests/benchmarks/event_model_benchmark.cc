// Benchmarks of the simulator: one replay of the GPT-2 XL trace under a mixed
// plan (target: under 0.2 ms on one core), plus the costs around it.
// scripts/benchmarks.sh runs this and writes docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include "absl/strings/match.h"
#include "planner/lower_bound.h"
#include "planner/replay_against.h"
#include "planner/replay_cost.h"
#include "planner/slackswap.h"
#include "service/trace_convert.h"
#include "service/wire_convert.h"
#include "simulator/event_model.h"
#include "simulator/medium_traces.h"
#include "simulator/schedule.h"
#include "simulator/trace_validation.h"
#include "simulator/workload.h"

namespace slackswap {
namespace {

struct Fixture {
  v1::Trace proto;
  Trace trace;
  Hardware hardware;
  Plan plan;
  SimulationOptions options;
};

// GPT-2 XL / A100 at 50% of peak with a plan of every kind: the layer outputs
// (expensive to rebuild) swapped, the normalization outputs and both MLP
// activations recomputed, everything else kept.
const Fixture& Gpt2Xl() {
  static const Fixture* fixture = [] {
    auto* f = new Fixture;
    f->hardware = *HardwarePreset("a100");
    f->proto = TraceSpecToProto(
        *GenerateTrace(*WorkloadPreset("gpt2-xl"), f->hardware));
    f->trace = *TraceFromProto(f->proto);
    f->plan = Plan::AllKeep(f->trace);
    for (int32_t t = 0; t < f->trace.num_tensors(); ++t) {
      const std::string& name = f->proto.tensors(t).name();
      if (absl::EndsWith(name, ".out")) {
        f->plan.decisions[t] = Decision::kSwap;
        f->plan.prefetch_issue_op[t] = f->trace.first_backward_op();
      } else if (absl::EndsWith(name, "qkv_in") ||
                 absl::EndsWith(name, "mlp_in") ||
                 absl::EndsWith(name, "fc2_in") ||
                 absl::EndsWith(name, "gelu_in")) {
        f->plan.decisions[t] = Decision::kRecompute;
      }
    }
    f->options.budget_bytes = AllKeepPeakBytes(f->trace) / 2;
    return f;
  }();
  return *fixture;
}

// The replay alone (schedule derived once), as a planner's inner loop runs it.
void BM_ReplayGpt2XlMixedPlan(benchmark::State& state) {
  const Fixture& f = Gpt2Xl();
  const Schedule schedule = DeriveSchedule(f.trace, f.plan);
  for (auto _ : state) {
    SimulationResult r =
        SimulateSchedule(f.trace, f.hardware, f.plan, schedule, f.options);
    if (!r.feasible) state.SkipWithError("plan is infeasible");
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ReplayGpt2XlMixedPlan)->Unit(benchmark::kMicrosecond);

// The same replay with node physics (2 GPUs behind one 25 GB/s uplink, HBM
// contention): rates change at events, as the planner's replays see them.
void BM_ReplayGpt2XlNodePhysics(benchmark::State& state) {
  const Fixture& f = Gpt2Xl();
  Hardware hardware = f.hardware;
  hardware.gpus_per_uplink = 2;
  hardware.uplink_d2h_bytes_per_second = 25'000'000'000;
  hardware.uplink_h2d_bytes_per_second = 25'000'000'000;
  SimulationOptions options = f.options;
  options.physics.hbm_contention = true;
  const Schedule schedule = DeriveSchedule(f.trace, f.plan);
  for (auto _ : state) {
    SimulationResult r =
        SimulateSchedule(f.trace, hardware, f.plan, schedule, options);
    if (!r.feasible) state.SkipWithError("plan is infeasible");
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ReplayGpt2XlNodePhysics)->Unit(benchmark::kMicrosecond);

// The same replay with the caching allocator observing (reserved peak).
void BM_ReplayGpt2XlCachingAllocator(benchmark::State& state) {
  const Fixture& f = Gpt2Xl();
  SimulationOptions options = f.options;
  options.physics.allocator = AllocatorKind::kCaching;
  const Schedule schedule = DeriveSchedule(f.trace, f.plan);
  for (auto _ : state) {
    SimulationResult r =
        SimulateSchedule(f.trace, f.hardware, f.plan, schedule, options);
    if (!r.feasible) state.SkipWithError("plan is infeasible");
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ReplayGpt2XlCachingAllocator)->Unit(benchmark::kMicrosecond);

// The schedule a plan implies (once per candidate plan in the planners).
void BM_DeriveScheduleGpt2Xl(benchmark::State& state) {
  const Fixture& f = Gpt2Xl();
  for (auto _ : state)
    benchmark::DoNotOptimize(DeriveSchedule(f.trace, f.plan));
}
BENCHMARK(BM_DeriveScheduleGpt2Xl)->Unit(benchmark::kMicrosecond);

// Simulate as a caller sees it: plan validation, schedule derivation, replay.
// What the searches charge for a replay like `r`, in replays
// (planner/replay_cost.h).
double Charge(const Trace& trace, const SimulationResult& r) {
  return static_cast<double>(ReplayCostMillis(trace, r)) / kReplayMillis;
}

void BM_SimulateGpt2XlMixedPlan(benchmark::State& state) {
  const Fixture& f = Gpt2Xl();
  double charge = 0;
  for (auto _ : state) {
    absl::StatusOr<SimulationResult> r =
        Simulate(f.trace, f.hardware, f.plan, f.options);
    charge = Charge(f.trace, *r);
    benchmark::DoNotOptimize(r);
  }
  state.counters["charge"] = charge;
}
BENCHMARK(BM_SimulateGpt2XlMixedPlan)->Unit(benchmark::kMicrosecond);

// A candidate the searches cut off at once (a cutoff no plan beats): plan
// validation and schedule derivation, and the replay's setup. The searches
// charge such a replay its elements and its one event (planner/
// replay_cost.h): the `charge` counter, in replays, beside the mixed plan's.
void BM_SimulateGpt2XlCutAtOnce(benchmark::State& state) {
  const Fixture& f = Gpt2Xl();
  SimulationOptions options = f.options;
  options.cutoff_ns = 1;
  double charge = 0;
  for (auto _ : state) {
    absl::StatusOr<SimulationResult> r =
        Simulate(f.trace, f.hardware, f.plan, options);
    if (!r->cut_off) state.SkipWithError("the replay was not cut off");
    charge = Charge(f.trace, *r);
    benchmark::DoNotOptimize(r);
  }
  state.counters["charge"] = charge;
}
BENCHMARK(BM_SimulateGpt2XlCutAtOnce)->Unit(benchmark::kMicrosecond);

// The same with the full timeline recorded.
void BM_SimulateGpt2XlWithTimeline(benchmark::State& state) {
  const Fixture& f = Gpt2Xl();
  SimulationOptions options = f.options;
  options.record_timeline = true;
  for (auto _ : state) {
    absl::StatusOr<SimulationResult> r =
        Simulate(f.trace, f.hardware, f.plan, options);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_SimulateGpt2XlWithTimeline)->Unit(benchmark::kMicrosecond);

// Validation and conversion of the wire-form trace (once per request).
void BM_TraceFromProtoGpt2Xl(benchmark::State& state) {
  const Fixture& f = Gpt2Xl();
  for (auto _ : state) {
    absl::StatusOr<Trace> trace = TraceFromProto(f.proto);
    benchmark::DoNotOptimize(trace);
  }
}
BENCHMARK(BM_TraceFromProtoGpt2Xl)->Unit(benchmark::kMicrosecond);

// From the serialized trace, the usual way: protobuf parses the message into
// an arena, then TraceFromProto.
void BM_ParseAndConvertGpt2Xl(benchmark::State& state) {
  const std::string bytes = Gpt2Xl().proto.SerializeAsString();
  for (auto _ : state) {
    google::protobuf::Arena arena;
    auto* message = google::protobuf::Arena::CreateMessage<v1::Trace>(&arena);
    message->ParseFromString(bytes);
    absl::StatusOr<Trace> trace = TraceFromProto(*message);
    benchmark::DoNotOptimize(trace);
  }
}
BENCHMARK(BM_ParseAndConvertGpt2Xl)->Unit(benchmark::kMicrosecond);

// The same through the wire decoder, as the server does.
void BM_TraceFromWireGpt2Xl(benchmark::State& state) {
  const std::string bytes = Gpt2Xl().proto.SerializeAsString();
  for (auto _ : state) {
    std::optional<absl::StatusOr<Trace>> trace = TraceFromWire(bytes);
    benchmark::DoNotOptimize(trace);
  }
}
BENCHMARK(BM_TraceFromWireGpt2Xl)->Unit(benchmark::kMicrosecond);

// A local search's candidates on a 263-tensor trace of branched blocks
// (docs/results.md section 15's branches213, 10% above its proven floor):
// the passes' plan (which completes) with one tensor kept or rebuilt
// instead, each candidate in turn, replayed against the plan as the
// searches do (ReplayAgainst: its schedule derived, the replay cut off once
// it cannot beat the plan). `events`: a candidate's on average;
// `plan_events`: the plan's own replay's.
struct Candidates {
  Trace trace;
  Hardware hardware;
  SimulationOptions options;
  SimulationResult reference;
  std::vector<Plan> plans;
  // The plan, its schedule and its replay's resume points (recorded).
  Plan plan;
  Schedule schedule;
  SimulationResult recorded;
};

const Candidates& BranchedCandidates() {
  static const Candidates* fixture = [] {
    auto* f = new Candidates;
    MediumTraceOptions shape;
    shape.shape = MediumShape::kBranches;
    const MediumTrace medium = RandomMediumTrace(213, shape);
    f->trace = *ValidateTrace(medium.trace);
    f->hardware = medium.hardware;
    const int64_t floor = ComputeProvenFloor(f->trace).bytes;
    const int64_t peak = AllKeepPeakBytes(f->trace);
    f->options.budget_bytes =
        floor + static_cast<int64_t>(static_cast<double>(peak - floor) * 0.1);
    PlannerOptions passes;
    passes.search_time_ms = 0;
    const PlanningResult planned =
        *PlanSlackSwap(f->trace, f->hardware, f->options.budget_bytes, passes);
    f->reference = planned.replay;
    f->plan = planned.plan;
    f->schedule = DeriveSchedule(f->trace, f->plan);
    SimulationOptions recording = f->options;
    recording.record_resume_points = true;
    f->recorded = SimulateSchedule(f->trace, f->hardware, f->plan, f->schedule,
                                   recording);
    for (int32_t t = 0; t < f->trace.num_tensors(); ++t) {
      const Tensor& tensor = f->trace.tensors[t];
      for (Decision d : {Decision::kKeep, Decision::kRecompute}) {
        if (planned.plan.decisions[t] == d ||
            (d == Decision::kRecompute && tensor.recompute_forbidden)) {
          continue;
        }
        Plan candidate = planned.plan;
        candidate.decisions[t] = d;
        candidate.prefetch_issue_op[t] = 0;
        f->plans.push_back(std::move(candidate));
      }
    }
    return f;
  }();
  return *fixture;
}

// One candidate's replay, on average over them all.
void BM_ReplayBranchedCandidates(benchmark::State& state) {
  const Candidates& f = BranchedCandidates();
  if (!f.reference.feasible) {
    state.SkipWithError("the passes' plan does not complete: nothing is cut");
    return;
  }
  size_t i = 0;
  int64_t events = 0, replays = 0;
  for (auto _ : state) {
    const SimulationResult r = ReplayAgainst(f.trace, f.hardware, f.plans[i],
                                             f.options, f.reference, nullptr);
    events += r.events;
    ++replays;
    i = i + 1 == f.plans.size() ? 0 : i + 1;
  }
  state.counters["events"] =
      static_cast<double>(events) / static_cast<double>(replays);
  state.counters["plan_events"] = static_cast<double>(f.reference.events);
  state.counters["candidates"] = static_cast<double>(f.plans.size());
}
BENCHMARK(BM_ReplayBranchedCandidates)->Unit(benchmark::kMicrosecond);

// The same, as the local search replays them: resumed from the plan's
// replay's states (resume_points.h), each recording its own.
void BM_ResumeBranchedCandidates(benchmark::State& state) {
  const Candidates& f = BranchedCandidates();
  if (!f.reference.feasible) {
    state.SkipWithError("the passes' plan does not complete: nothing is cut");
    return;
  }
  const ResumeBase base{&f.plan, &f.schedule, &f.recorded.resume_points};
  SimulationOptions options = f.options;
  options.record_resume_points = true;
  size_t i = 0;
  int64_t events = 0, skipped = 0, replays = 0;
  for (auto _ : state) {
    const SimulationResult r =
        ReplayAgainst(f.trace, f.hardware, f.plans[i], options, f.reference,
                      nullptr, nullptr, nullptr, &base);
    events += r.events;
    skipped += r.resumed_events;
    ++replays;
    i = i + 1 == f.plans.size() ? 0 : i + 1;
  }
  state.counters["events"] =
      static_cast<double>(events) / static_cast<double>(replays);
  state.counters["resumed_events"] =
      static_cast<double>(skipped) / static_cast<double>(replays);
}
BENCHMARK(BM_ResumeBranchedCandidates)->Unit(benchmark::kMicrosecond);

// Their schedules alone.
void BM_DeriveBranchedCandidates(benchmark::State& state) {
  const Candidates& f = BranchedCandidates();
  size_t i = 0;
  Schedule schedule;
  for (auto _ : state) {
    DeriveSchedule(f.trace, f.plans[i], schedule);
    benchmark::DoNotOptimize(schedule);
    i = i + 1 == f.plans.size() ? 0 : i + 1;
  }
}
BENCHMARK(BM_DeriveBranchedCandidates)->Unit(benchmark::kMicrosecond);

void BM_GenerateGpt2Xl(benchmark::State& state) {
  const Hardware hw = *HardwarePreset("a100");
  const WorkloadSpec spec = *WorkloadPreset("gpt2-xl");
  for (auto _ : state) {
    absl::StatusOr<TraceSpec> trace = GenerateTrace(spec, hw);
    benchmark::DoNotOptimize(trace);
  }
}
BENCHMARK(BM_GenerateGpt2Xl)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace slackswap

BENCHMARK_MAIN();
