// libFuzzer target over the service's node-level surfaces: PlanNode requests,
// Plan requests with the physics fields at their limits, and reserved
// budgets, each through ServiceCore as the server calls it (with the
// server's default call limits), with the service's promises checked on
// every answer.
//
// Input: kControlBytes control bytes, then a serialized slackswap.v1.Trace
// (or, in the raw mode, a serialized slackswap.v1.PlanNodeRequest). The
// control bits are read from the low bit of the first byte on:
//   2 bits  the mode: 0 and 1 PlanNode with 1-3 jobs of the trace, 2 Plan,
//           3 the rest of the input parsed as a PlanNodeRequest;
//   3 bits  when the stop function starts answering true (kStopAfterCalls:
//           at the latest after kMaxStopCalls calls, as a deadline would);
//   7 bits  the options: search time, repair rounds, per-layer barriers,
//           link-budget pass off, production-order ranking;
//   22 bits the hardware and physics: each link's rate, the latency, each
//           uplink direction's rate (from 0, no cap, to INT64_MAX), HBM
//           contention with the matmul and HBM rates, the allocator model
//           and a reserved budget;
// then for PlanNode the jobs (count, steps, and per job the budget, as
// bytes or as a fraction of the all-keep peak, its GPUs and its policy),
// and for Plan the GPUs per uplink (up to 64), the rank skew (up to 2^40 and
// one past it), every operator's flops and memory traffic (up to 2^60), the
// budget and the policy. Each table holds the extremes the validation
// admits, and a few values just past them.
// The seed corpus (tests/fuzz/request_corpus, made by
// tests/fuzz/make_request_corpus.py from tests/fuzz/corpus) holds every
// model family behind control bytes of each mode.
//
// Every finding aborts: a crash or sanitizer report; an error without a
// message, an INVALID_ARGUMENT or RESOURCE_EXHAUSTED without a field path
// that its message starts with, CANCELLED without a stop, or any other
// code; a planned report whose replay did not complete or holds more than
// its budget (reserved bytes under a reserved budget); a Plan answer that
// Simulate does not reproduce (nor a PlanNode job's, where it had the whole
// uplink); two runs of one request, neither stopped, whose responses differ
// in a byte (planning times aside); and, as a timeout, a request that runs
// on without asking its stop function.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/field_violations.h"
#include "google/protobuf/stubs/logging.h"
#include "planner/allocator_budget.h"
#include "service/service_core.h"
#include "service/trace_convert.h"
#include "service/wire_convert.h"
#include "simulator/event_model.h"
#include "slackswap/v1/service.pb.h"

namespace slackswap {
namespace {

constexpr int kControlBytes = 10;
// Traces larger than this are valid input but make each run slow (every
// request runs twice, and a node plans each job up to three times).
constexpr int kMaxFuzzedOperators = 512;
constexpr int kMaxFuzzedTensors = 512;
// SwapAdvisor replays thousands of plans: only on the smallest traces.
constexpr int kMaxSwapAdvisorOperators = 16;
// Skewed ranks are replayed one by one, each beside the others: a Plan's
// operators times its skewed ranks stay within this.
constexpr int kMaxFuzzedRankOperators = 64;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// The stop function answers true from this call on. The service polls it
// between plans and as each replay starts and every 1,024 events of it
// (well under a ms apart on these traces, under the sanitizers): a request
// stops within a few seconds at the latest, as under a deadline, so that an
// input that runs out the fuzzer's time limit is one that does not poll.
constexpr int64_t kMaxStopCalls = 4000;
constexpr int64_t kStopAfterCalls[8] = {kMaxStopCalls,
                                        kMaxStopCalls,
                                        kMaxStopCalls,
                                        kMaxStopCalls,
                                        kMaxStopCalls,
                                        kMaxStopCalls,
                                        16,
                                        256};
constexpr double kSearchTimeMs[4] = {0, 0.5, 1, 2};
constexpr int32_t kRepairIterations[4] = {1, 4, 16, 32};
// Each GPU's link, per direction (1 byte/s fails the time-range check on
// all but the smallest traces; INT64_MAX any HBM contention).
constexpr int64_t kLinkRates[8] = {25'000'000'000,
                                   25'000'000'000,
                                   12'000'000'000,
                                   50'000'000'000,
                                   1'000'000'000,
                                   1'000'000,
                                   1,
                                   kInt64Max};
// The shared uplink, per direction: 0 is no cap.
constexpr int64_t kUplinkRates[8] = {
    0,
    1,
    1'000'000,
    1'000'000'000,
    25'000'000'000,
    int64_t{1} << 62,
    kInt64Max - 511,  // 2^63 - 512: the least int64 whose double is 2^63
    kInt64Max,
};
constexpr int64_t kMatmulRates[4] = {1, 100'000'000'000'000, int64_t{1} << 62,
                                     kInt64Max};
// The first is below twice any link (HBM contention refuses it), the second
// exactly twice two 25 GB/s links.
constexpr int64_t kHbmRates[8] = {1,
                                  100'000'000'000,
                                  1'000'000'000'000,
                                  1'000'000'000'000,
                                  int64_t{1} << 62,
                                  int64_t{1} << 62,
                                  kInt64Max,
                                  kInt64Max};
constexpr int32_t kGpusPerUplink[8] = {0, 1, 2, 3, 8, 16, 63, 64};
constexpr int64_t kRankSkewNs[8] = {
    0,
    1,
    7'000,
    1'000'000,
    int64_t{1} << 32,
    (int64_t{1} << 40) - 1,
    int64_t{1} << 40,
    (int64_t{1} << 40) + 1,  // refused
};
// Every operator's flops and memory traffic; -1 keeps the trace's.
constexpr int64_t kOpQuantities[4] = {-1, 1, int64_t{1} << 40,
                                      int64_t{1} << 60};
constexpr double kBudgetFractions[8] = {0.05, 0.2, 0.3, 0.5,
                                        0.7,  0.9, 1.0, 4.0};
constexpr int32_t kSteps[8] = {0, 2, 3, 4, 5, 6, 7, 8};
// Neither the genetic search nor the exact optimum: a node refuses them,
// and a plan with them takes seconds. SlackSwap weighs most.
constexpr v1::Policy kPolicies[16] = {
    v1::POLICY_SLACKSWAP,
    v1::POLICY_UNSPECIFIED,
    v1::POLICY_SLACKSWAP,
    v1::POLICY_SLACKSWAP,
    v1::POLICY_SLACKSWAP_PRODUCTION_ORDER,
    v1::POLICY_SLACKSWAP_NO_LINK_BUDGET,
    v1::POLICY_SLACKSWAP_BARRIERS,
    v1::POLICY_VDNN,
    v1::POLICY_VDNN,
    v1::POLICY_SUPERNEURONS,
    v1::POLICY_SWAPADVISOR,
    v1::POLICY_CHECKPOINTING,
    v1::POLICY_CHECKPOINTING,
    v1::POLICY_IDEAL,
    v1::POLICY_IDEAL,
    v1::POLICY_SLACKSWAP_BARRIERS,
};

// REQUEST_FUZZER_VERBOSE set: each request's answer on stderr (for triage).
bool verbose = false;

void Fail(const char* what, const std::string& detail) {
  std::cerr << "request_fuzzer: " << what << ": " << detail << std::endl;
  std::abort();
}

// The control bits, low bit of the first byte first; past the last byte,
// zeros.
class ControlBits {
 public:
  explicit ControlBits(const uint8_t* bytes) : bytes_(bytes) {}

  uint32_t Take(int bits) {
    uint32_t value = 0;
    for (int i = 0; i < bits; ++i, ++next_) {
      if (next_ >= kControlBytes * 8) break;
      value |= ((bytes_[next_ / 8] >> (next_ % 8)) & 1u) << i;
    }
    return value;
  }
  bool Flag() { return Take(1) != 0; }
  // An entry of a table whose size is a power of two.
  template <typename T, size_t N>
  T Pick(const T (&table)[N]) {
    static_assert(N > 0 && (N & (N - 1)) == 0, "a power-of-two table");
    int bits = 0;
    while ((size_t{1} << bits) < N) ++bits;
    return table[Take(bits)];
  }

 private:
  const uint8_t* bytes_;
  int next_ = 0;
};

// The stop function a request runs with: false for its first
// `stop_after` - 1 calls. (Atomic: SwapAdvisor asks from its threads.)
class CountingStop {
 public:
  explicit CountingStop(int64_t stop_after) : stop_after_(stop_after) {}

  StopFunction Function() {
    return [this] {
      const int64_t calls = calls_.fetch_add(1) + 1;
      if (calls < stop_after_) return false;
      stopped_ = true;
      return true;
    };
  }
  bool stopped() const { return stopped_; }
  int64_t calls() const { return calls_; }

 private:
  const int64_t stop_after_;
  std::atomic<int64_t> calls_{0};
  std::atomic<bool> stopped_{false};
};

// What the controls set besides the mode and the request's shape.
struct Common {
  int64_t stop_after = 0;
  v1::PlannerOptions options;
  v1::Hardware hardware;
  v1::Physics physics;
};

Common ReadCommon(ControlBits& c) {
  Common common;
  common.stop_after = c.Pick(kStopAfterCalls);
  v1::PlannerOptions& o = common.options;
  o.set_search_time_ms(c.Pick(kSearchTimeMs));
  o.set_max_repair_iterations(c.Pick(kRepairIterations));
  o.set_per_layer_barriers(c.Flag());
  if (c.Flag()) o.set_link_budget_pass(false);
  if (c.Flag()) o.set_ranking(v1::SWAP_RANKING_PRODUCTION_ORDER);
  v1::Hardware& h = common.hardware;
  h.set_name("fuzz");
  h.set_d2h_bytes_per_second(c.Pick(kLinkRates));
  h.set_h2d_bytes_per_second(c.Pick(kLinkRates));
  if (c.Flag()) h.set_transfer_latency_ns(7'000);
  h.set_uplink_d2h_bytes_per_second(c.Pick(kUplinkRates));
  h.set_uplink_h2d_bytes_per_second(c.Pick(kUplinkRates));
  v1::Physics& p = common.physics;
  p.set_hbm_contention(c.Flag());
  h.set_matmul_flops_per_second(c.Pick(kMatmulRates));
  h.set_hbm_bytes_per_second(c.Pick(kHbmRates));
  constexpr v1::AllocatorModel kAllocators[4] = {
      v1::ALLOCATOR_MODEL_NONE, v1::ALLOCATOR_MODEL_CACHING,
      v1::ALLOCATOR_MODEL_EXPANDABLE, v1::ALLOCATOR_MODEL_CACHING};
  p.set_allocator(c.Pick(kAllocators));
  // A reserved budget only with an allocator model (without one the service
  // refuses it, at once).
  if (c.Flag() && p.allocator() != v1::ALLOCATOR_MODEL_NONE)
    p.set_budget_reserved(true);
  return common;
}

v1::Budget BudgetOf(ControlBits& c, int64_t all_keep_peak_bytes) {
  const double fraction = c.Pick(kBudgetFractions);
  v1::Budget budget;
  if (c.Flag()) {
    budget.set_bytes(static_cast<int64_t>(
        static_cast<long double>(all_keep_peak_bytes) * fraction));
  } else {
    budget.set_fraction_of_peak(fraction);
  }
  return budget;
}

v1::Policy PolicyOf(ControlBits& c, const v1::Trace& trace) {
  const v1::Policy policy = c.Pick(kPolicies);
  if (policy == v1::POLICY_SWAPADVISOR &&
      trace.operators_size() > kMaxSwapAdvisorOperators) {
    return v1::POLICY_SLACKSWAP;
  }
  return policy;
}

// The status's promises (field_violations.h, service_core.h).
void CheckError(const absl::Status& status, bool stopped) {
  const std::string text = status.ToString();
  if (status.message().empty()) Fail("status", "no message: " + text);
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kResourceExhausted: {
      const std::vector<FieldViolation> violations = FieldViolationsOf(status);
      if (violations.empty()) Fail("status", "no field path: " + text);
      const std::string& field = violations[0].field;
      if (field.empty() || absl::StartsWith(field, ".") ||
          !absl::StartsWith(status.message(), absl::StrCat(field, ": "))) {
        Fail("status", absl::StrCat("the message does not start with the ",
                                    "field path '", field, "': ", text));
      }
      return;
    }
    case absl::StatusCode::kCancelled:
      if (!stopped) Fail("status", "cancelled without a stop: " + text);
      return;
    default:
      Fail("status", "an unexpected code: " + text);
  }
}

// A planned report replays within its budget: resident bytes, or reserved
// bytes under a reserved budget.
void CheckReport(const std::string& where, const v1::PlanningReport& report,
                 int64_t budget_bytes, bool budget_reserved) {
  if (report.outcome() != v1::PLAN_OUTCOME_PLANNED) return;
  const v1::Metrics& m = report.metrics();
  if (m.outcome() != v1::SIMULATION_OUTCOME_COMPLETED)
    Fail(where.c_str(), "a planned report whose replay did not complete");
  const int64_t held =
      budget_reserved ? m.peak_reserved_bytes() : m.peak_resident_bytes();
  if (held > budget_bytes) {
    Fail(where.c_str(),
         absl::StrCat("a plan holding ", held, " bytes above its budget of ",
                      budget_bytes));
  }
}

// Whether `policy`'s plans replay with per-layer barriers.
bool UsesBarriers(v1::Policy policy, const v1::PlannerOptions& options) {
  switch (policy) {
    case v1::POLICY_UNSPECIFIED:
    case v1::POLICY_SLACKSWAP:
    case v1::POLICY_SLACKSWAP_PRODUCTION_ORDER:
    case v1::POLICY_SLACKSWAP_NO_LINK_BUDGET:
      return options.per_layer_barriers();
    case v1::POLICY_SLACKSWAP_BARRIERS:
    case v1::POLICY_VDNN:
    case v1::POLICY_SUPERNEURONS:
      return true;
    default:
      return false;
  }
}

// Simulate reproduces a planned report's replay on `hardware` (the request's
// hardware and physics, converted).
void CheckReplay(const std::string& where, const Trace& trace,
                 const Hardware& hardware, const v1::Physics& physics,
                 int64_t budget_bytes, bool barriers,
                 const v1::PlanningReport& report) {
  if (report.outcome() != v1::PLAN_OUTCOME_PLANNED) return;
  const absl::StatusOr<Physics> memory = PhysicsFromProto(physics);
  const absl::StatusOr<Plan> plan = PlanFromProto(trace, report.plan());
  if (!memory.ok() || !plan.ok()) {
    Fail(where.c_str(), "a planned report of an invalid request or plan");
  }
  const v1::Metrics& m = report.metrics();
  const SimulationOptions options =
      AllocatorReplayOptions(budget_bytes, *memory, barriers);
  const absl::StatusOr<SimulationResult> again =
      Simulate(trace, hardware, *plan, options);
  if (!again.ok()) {
    Fail(where.c_str(),
         "a plan Simulate refuses: " + again.status().ToString());
  }
  if (!again->feasible || again->iteration_ns != m.iteration_ns() ||
      again->peak_resident_bytes != m.peak_resident_bytes() ||
      again->peak_reserved_bytes != m.peak_reserved_bytes()) {
    Fail(where.c_str(),
         absl::StrCat(
             "the replay does not reproduce the plan: ", again->iteration_ns,
             " ns, ", again->peak_resident_bytes, " resident and ",
             again->peak_reserved_bytes,
             " reserved bytes; the report: ", m.iteration_ns(), " ns, ",
             m.peak_resident_bytes(), " and ", m.peak_reserved_bytes()));
  }
}

// Runs `call` twice, each with a fresh stop function; checks each error and,
// when neither run was stopped, that both gave the same bytes (planning
// times cleared). Returns the first answer.
template <typename Response, typename Call>
absl::StatusOr<Response> RunTwice(int64_t stop_after, const Call& call,
                                  bool& stopped) {
  CountingStop first_stop(stop_after);
  absl::StatusOr<Response> first = call(first_stop.Function());
  CountingStop second_stop(stop_after);
  absl::StatusOr<Response> second = call(second_stop.Function());
  stopped = first_stop.stopped() || second_stop.stopped();
  if (verbose) {
    std::cerr << "request_fuzzer: " << Response::descriptor()->name() << " "
              << first.status() << ", " << first_stop.calls() << " stop calls"
              << (stopped ? " (stopped)" : "") << std::endl;
  }
  if (!first.ok()) CheckError(first.status(), first_stop.stopped());
  if (!second.ok()) CheckError(second.status(), second_stop.stopped());
  if (stopped) return first;
  if (first.ok() != second.ok() ||
      (!first.ok() && first.status() != second.status())) {
    Fail("determinism",
         absl::StrCat("two runs answered ", first.status().ToString(), " and ",
                      second.status().ToString()));
  }
  if (!first.ok()) return first;
  first->clear_planning_time_ns();
  second->clear_planning_time_ns();
  if (first->SerializeAsString() != second->SerializeAsString())
    Fail("determinism", "two runs gave different responses");
  return first;
}

// A core with the server's default call limits (server_main.cc).
const ServiceCore& Core() {
  CallLimits limits;
  limits.max_memory_bytes = int64_t{256} << 20;
  limits.max_work = int64_t{1} << 34;
  static const ServiceCore* core = new ServiceCore(nullptr, limits);
  return *core;
}

// Every job's report against its budget (resolved as the service resolves
// it), and the replay of each job planned for the whole uplink.
void CheckNodeResponse(const v1::PlanNodeRequest& request,
                       const v1::PlanNodeResponse& response) {
  if (response.jobs_size() != request.jobs_size())
    Fail("plan_node", "a report per job");
  for (int j = 0; j < request.jobs_size(); ++j) {
    const std::string where = absl::StrCat("plan_node jobs[", j, "]");
    const v1::NodeJob& job = request.jobs(j);
    const v1::NodeJobReport& out = response.jobs(j);
    const absl::StatusOr<Trace> trace = TraceFromProto(job.trace());
    if (!trace.ok()) Fail(where.c_str(), "planned with an invalid trace");
    const absl::StatusOr<int64_t> budget = ResolveBudget(*trace, job.budget());
    if (!budget.ok()) Fail(where.c_str(), "planned with an invalid budget");
    if (out.outcome() == v1::PLAN_OUTCOME_PLANNED &&
        out.report().outcome() != v1::PLAN_OUTCOME_PLANNED) {
      Fail(where.c_str(), "a job planned whose report has no plan");
    }
    CheckReport(where, out.report(), *budget,
                request.physics().budget_reserved());
    // A job with the whole uplink (alone on the node) replays on the
    // node's hardware with its GPUs: the report's replay.
    if (out.uplink_share() == 1.0) {
      absl::StatusOr<Hardware> hardware = HardwareFromProto(request.hardware());
      if (!hardware.ok()) Fail(where.c_str(), "planned on invalid hardware");
      hardware->gpus_per_uplink = std::max(job.gpus(), 1);
      CheckReplay(where, *trace, *hardware, request.physics(), *budget,
                  UsesBarriers(job.policy(), request.options()), out.report());
    }
  }
}

void RunNode(int64_t stop_after, const v1::PlanNodeRequest& request) {
  bool stopped = false;
  const absl::StatusOr<v1::PlanNodeResponse> response =
      RunTwice<v1::PlanNodeResponse>(
          stop_after,
          [&](const StopFunction& stop) {
            return Core().PlanNode(request, stop);
          },
          stopped);
  if (response.ok()) CheckNodeResponse(request, *response);
}

void FuzzNode(ControlBits& c, const Common& common, const v1::Trace& message,
              const Trace& trace) {
  v1::PlanNodeRequest request;
  *request.mutable_hardware() = common.hardware;
  *request.mutable_options() = common.options;
  *request.mutable_physics() = common.physics;
  const int jobs = 1 + static_cast<int>(c.Take(2) % 3);
  request.set_steps(c.Pick(kSteps));
  const int64_t peak = AllKeepPeakBytes(trace);
  for (int j = 0; j < jobs; ++j) {
    v1::NodeJob* job = request.add_jobs();
    job->set_name(absl::StrCat("job", j));
    *job->mutable_trace() = message;
    *job->mutable_budget() = BudgetOf(c, peak);
    job->set_gpus(1 + static_cast<int32_t>(c.Take(2)));
    job->set_policy(PolicyOf(c, message));
  }
  RunNode(common.stop_after, request);
}

void FuzzPlan(ControlBits& c, const Common& common, v1::Trace message) {
  v1::PlanRequest request;
  *request.mutable_hardware() = common.hardware;
  *request.mutable_options() = common.options;
  *request.mutable_physics() = common.physics;
  int32_t gpus = c.Pick(kGpusPerUplink);
  const int64_t skew_ns = c.Pick(kRankSkewNs);
  if (skew_ns > 0 && message.operators_size() > 0) {
    gpus = std::min(
        gpus, std::max(kMaxFuzzedRankOperators / message.operators_size(), 1));
  }
  request.mutable_hardware()->set_gpus_per_uplink(gpus);
  request.mutable_physics()->set_rank_skew_ns(skew_ns);
  const int64_t flops = c.Pick(kOpQuantities);
  const int64_t traffic = c.Pick(kOpQuantities);
  for (v1::Operator& op : *message.mutable_operators()) {
    if (flops >= 0) op.set_flops(flops);
    if (traffic >= 0) op.set_memory_traffic_bytes(traffic);
  }
  const absl::StatusOr<Trace> trace = TraceFromProto(message);
  if (!trace.ok()) return;
  *request.mutable_budget() = BudgetOf(c, AllKeepPeakBytes(*trace));
  request.set_policy(PolicyOf(c, message));
  *request.mutable_trace() = std::move(message);

  bool stopped = false;
  const absl::StatusOr<v1::PlanResponse> response = RunTwice<v1::PlanResponse>(
      common.stop_after,
      [&](const StopFunction& stop) { return Core().Plan(request, stop); },
      stopped);
  if (!response.ok()) return;
  const absl::StatusOr<int64_t> budget =
      ResolveBudget(*trace, request.budget());
  if (!budget.ok()) Fail("plan", "planned with an invalid budget");
  CheckReport("plan", response->report(), *budget,
              request.physics().budget_reserved());
  absl::StatusOr<Hardware> hardware = HardwareFromProto(request.hardware());
  if (!hardware.ok()) Fail("plan", "planned on invalid hardware");
  CheckReplay("plan", *trace, *hardware, request.physics(), *budget,
              UsesBarriers(request.policy(), request.options()),
              response->report());
}

// The request as given, with its cost bounded as the structured modes bound
// it: the options' search and repairs from the controls, no linear program,
// small traces, SwapAdvisor only on the smallest.
void FuzzRaw(const Common& common, const uint8_t* data, size_t size) {
  v1::PlanNodeRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  v1::PlannerOptions& options = *request.mutable_options();
  options.set_search_time_ms(common.options.search_time_ms());
  options.set_max_repair_iterations(common.options.max_repair_iterations());
  options.clear_linear_program_bound();
  for (v1::NodeJob& job : *request.mutable_jobs()) {
    if (job.trace().operators_size() > kMaxFuzzedOperators ||
        job.trace().tensors_size() > kMaxFuzzedTensors) {
      return;
    }
    if (job.policy() == v1::POLICY_SWAPADVISOR &&
        job.trace().operators_size() > kMaxSwapAdvisorOperators) {
      job.set_policy(v1::POLICY_SLACKSWAP);
    }
  }
  RunNode(common.stop_after, request);
}

void FuzzOne(const uint8_t* data, size_t size) {
  if (size < kControlBytes) return;
  ControlBits c(data);
  const uint32_t mode = c.Take(2);
  const Common common = ReadCommon(c);
  data += kControlBytes;
  size -= kControlBytes;
  if (mode == 3) {
    FuzzRaw(common, data, size);
    return;
  }
  v1::Trace message;
  if (!message.ParseFromArray(data, static_cast<int>(size))) return;
  if (message.operators_size() > kMaxFuzzedOperators ||
      message.tensors_size() > kMaxFuzzedTensors) {
    return;
  }
  if (mode == 2) {
    FuzzPlan(c, common, std::move(message));
    return;
  }
  // An invalid trace is the trace fuzzer's ground: here it only needs its
  // peak for the budgets.
  const absl::StatusOr<Trace> trace = TraceFromProto(message);
  if (!trace.ok()) return;
  FuzzNode(c, common, message, *trace);
}

}  // namespace
}  // namespace slackswap

// Protobuf logs a line for every string that is not UTF-8 (the server drops
// those lines too): silence it.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  slackswap::verbose = std::getenv("REQUEST_FUZZER_VERBOSE") != nullptr;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  slackswap::FuzzOne(data, size);
  return 0;
}
