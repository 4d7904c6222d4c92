// libFuzzer target over what a request's bytes reach: the wire decoder, the
// protobuf fallback and validation, the hardware time-range check, and every
// planning policy, with the service's promises checked on each plan.
//
// Input: one control byte, then a serialized slackswap.v1.Trace.
//   bits 0-3: the budget, as (bits + 1) / 16 of the all-keep peak;
//   bits 4-5: the link (fast, slow, asymmetric, with latency); the last
//             also puts two GPUs behind one uplink as fast as one link,
//             with HBM contention and the caching allocator observed (node
//             physics; the exact optimum is not compared there);
//   bit 6:    a host pinned-memory cap of a quarter of the saved bytes;
//   bit 7:    per-layer barriers for SlackSwap.
// The seed corpus (tests/fuzz/corpus, made by tests/fuzz/make_corpus.sh) holds
// generated traces of every model family and the optimality repro cases.
//
// Every finding aborts: a crash or sanitizer report, an over-budget or
// unreplayable feasible plan, or a nondeterministic one.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include "google/protobuf/stubs/logging.h"
#include "planner/lower_bound.h"
#include "planner/policies.h"
#include "service/trace_convert.h"
#include "service/wire_convert.h"
#include "simulator/event_model.h"
#include "slackswap/v1/trace.pb.h"

namespace slackswap {
namespace {

// Traces larger than this are valid input but make each run slow; the limits
// themselves are exercised by the tests.
constexpr int kMaxFuzzedOperators = 4096;

void Fail(const char* what, const std::string& detail) {
  std::cerr << "trace_fuzzer: " << what << ": " << detail << std::endl;
  std::abort();
}

Hardware LinkOf(uint8_t control) {
  Hardware h;
  h.name = "fuzz";
  h.matmul_flops_per_second = 100'000'000'000'000;
  h.hbm_bytes_per_second = 1'000'000'000'000;
  switch ((control >> 4) & 3) {
    case 0:  // PCIe 4.0
      h.d2h_bytes_per_second = h.h2d_bytes_per_second = 25'000'000'000;
      break;
    case 1:  // a slow link: recomputation does the work
      h.d2h_bytes_per_second = h.h2d_bytes_per_second = 1'000'000;
      break;
    case 2:  // asymmetric
      h.d2h_bytes_per_second = 12'000'000'000;
      h.h2d_bytes_per_second = 50'000'000'000;
      break;
    default:  // one byte per ns, with latency, on a shared uplink
      h.d2h_bytes_per_second = h.h2d_bytes_per_second = 1'000'000'000;
      h.transfer_latency_ns = 7'000;
      h.gpus_per_uplink = 2;
      h.uplink_d2h_bytes_per_second = h.uplink_h2d_bytes_per_second =
          1'000'000'000;
  }
  return h;
}

// The physics that goes with LinkOf(control): HBM contention on the shared
// uplink.
Physics PhysicsOf(uint8_t control) {
  Physics physics;
  physics.hbm_contention = ((control >> 4) & 3) == 3;
  return physics;
}

void CheckPlan(const Trace& trace, const Hardware& hardware,
               const Physics& physics, Policy policy, int64_t budget,
               const PlanningResult& r) {
  if (!r.feasible) return;
  if (r.replay.peak_resident_bytes > budget) {
    Fail(PolicyName(policy), "a feasible plan above its budget");
  }
  if (!r.lower_bound.feasible) {
    Fail(PolicyName(policy), "a feasible plan where the bound proves none");
  }
  SimulationOptions sim;
  sim.budget_bytes = budget;
  sim.per_layer_barriers = r.per_layer_barriers;
  sim.physics = physics.NodeOnly();
  const absl::StatusOr<SimulationResult> again =
      Simulate(trace, hardware, r.plan, sim);
  if (!again.ok()) {
    Fail(PolicyName(policy), "an invalid plan: " + again.status().ToString());
  }
  if (!again->feasible || again->iteration_ns != r.replay.iteration_ns ||
      again->peak_resident_bytes != r.replay.peak_resident_bytes) {
    Fail(PolicyName(policy), "the replay does not reproduce the plan");
  }
  if (r.lower_bound.iteration_ns > r.replay.iteration_ns) {
    Fail(PolicyName(policy), "the lower bound exceeds a real plan");
  }
}

void FuzzOne(const uint8_t* data, size_t size) {
  if (size < 1) return;
  const uint8_t control = data[0];
  const absl::string_view bytes(reinterpret_cast<const char*>(data + 1),
                                size - 1);
  // The server's path: the wire decoder, or protobuf for other encodings.
  std::optional<absl::StatusOr<Trace>> decoded = TraceFromWire(bytes);
  if (!decoded.has_value()) {
    v1::Trace message;
    if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
      return;
    decoded = TraceFromProto(message);
  }
  if (!decoded->ok()) {
    if (decoded->status().message().empty()) Fail("validation", "no message");
    return;
  }
  const Trace& trace = **decoded;
  if (trace.num_ops() > kMaxFuzzedOperators) return;
  Hardware hardware = LinkOf(control);
  if (control & 0x40) {
    hardware.host_pinned_memory_bytes =
        std::max<int64_t>(1, trace.total_tensor_bytes / 4);
  }
  const Physics physics = PhysicsOf(control);
  if (!CheckTimeRange(trace, hardware).ok() ||
      !CheckPhysics(trace, hardware, physics).ok()) {
    return;
  }
  const bool node_physics = UsesNodePhysics(hardware, physics);
  const int64_t peak = AllKeepPeakBytes(trace);
  const int64_t budget = static_cast<int64_t>(static_cast<long double>(peak) *
                                              ((control & 15) + 1) / 16);

  PolicyOptions options;
  options.slackswap.per_layer_barriers = (control & 0x80) != 0;
  options.slackswap.max_repair_iterations = 16;
  options.slackswap.search_time_ms = 2;  // the search, briefly
  options.genetic_search.max_evaluations = 96;
  options.genetic_search.threads = 1;
  options.swapadvisor.max_evaluations = 96;
  options.swapadvisor.threads = 1;
  options.physics = physics;
  if (node_physics) options.physics.allocator = AllocatorKind::kCaching;
  // The exact optimum of a small trace: no policy beats it, the bound stays
  // below it, and SlackSwap plans wherever it does.
  std::optional<PlanningResult> optimum;
  if (trace.num_tensors() <= 6 && trace.num_ops() <= 40 && !node_physics) {
    options.optimum.max_replays = 200'000;
    absl::StatusOr<PlanningResult> r =
        RunPolicy(Policy::kOptimum, trace, hardware, budget, options);
    if (r.ok())
      optimum = *std::move(r);
    else if (!absl::IsResourceExhausted(r.status()))
      Fail("optimum", r.status().ToString());
  }
  for (Policy policy : AllPolicies()) {
    if (policy == Policy::kOptimum) continue;
    const absl::StatusOr<PlanningResult> r =
        RunPolicyWithinBudget(policy, trace, hardware, budget, options);
    if (!r.ok()) Fail(PolicyName(policy), r.status().ToString());
    CheckPlan(trace, hardware, physics, policy, budget, *r);
    // The optimum is over plans without per-layer barriers: plans replayed
    // with them (whose waits may reorder memory) are not compared.
    if (!optimum.has_value() || policy == Policy::kIdeal ||
        r->per_layer_barriers) {
      continue;
    }
    if (r->feasible && !optimum->feasible)
      Fail(PolicyName(policy), "a plan where the exact search found none");
    if (r->feasible && r->replay.iteration_ns < optimum->replay.iteration_ns)
      Fail(PolicyName(policy), "a plan faster than the optimum");
    if (policy == Policy::kSlackSwap && optimum->feasible && !r->feasible)
      Fail("slackswap", "infeasible where the optimum plans");
  }
  if (optimum.has_value() && optimum->feasible) {
    CheckPlan(trace, hardware, physics, Policy::kOptimum, budget, *optimum);
    const LowerBound lp = ComputeLowerBound(trace, hardware, budget, true);
    if (lp.iteration_ns > optimum->replay.iteration_ns)
      Fail("lower bound", "above the optimum");
  }
  // Deterministic: the same request gives the same plan.
  const absl::StatusOr<PlanningResult> a =
      RunPolicy(Policy::kSlackSwap, trace, hardware, budget, options);
  const absl::StatusOr<PlanningResult> b =
      RunPolicy(Policy::kSlackSwap, trace, hardware, budget, options);
  if (a->plan.decisions != b->plan.decisions ||
      a->plan.prefetch_issue_op != b->plan.prefetch_issue_op ||
      a->replay.iteration_ns != b->replay.iteration_ns) {
    Fail("slackswap", "two runs gave different plans");
  }
}

}  // namespace
}  // namespace slackswap

// Protobuf logs a line for every string that is not UTF-8 (the server drops
// those lines too): silence it.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  slackswap::FuzzOne(data, size);
  return 0;
}
