// slackswap: the command-line tool. Every subcommand runs in-process, or
// against a slackswap-server with --server ADDRESS, and prints the same
// output either way.
//
//   slackswap generate --preset gpt2-xl --hardware a100 --out trace.json
//   slackswap plan --trace trace.json --hardware a100 --budget 0.5
//   slackswap plan --server localhost:50051 --trace trace.json --budget 0.5
//
// Run `slackswap help` for every subcommand and flag.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/field_violations.h"
#include "base/malloc_tuning.h"
#include "base/status_macros.h"
#include "client/backend.h"
#include "client/chrome_trace.h"
#include "client/load_generator.h"
#include "client/report.h"
#include "planner/basic_plans.h"
#include "planner/planner_proto.h"
#include "planner/policies.h"
#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/proto_convert.h"
#include "simulator/trace_io.h"
#include "simulator/workload.h"

ABSL_FLAG(std::string, preset, "gpt2-xl",
          "workload preset: bert-large, gpt2-xl, llama-7b, vgg16 (ignored with "
          "--trace)");
ABSL_FLAG(std::string, trace, "",
          "trace file (binary protobuf or JSON) instead of --preset");
ABSL_FLAG(
    std::string, hardware, "a100",
    "hardware preset (titan-x, v100, a100, h100, gh200) or a Hardware file "
    "(generate: presets only)");
ABSL_FLAG(int64_t, batch, 0, "batch size (0: the preset's)");
ABSL_FLAG(int64_t, seq, 0, "sequence length (0: the preset's)");
ABSL_FLAG(int32_t, layers, 0, "transformer layers (0: the preset's)");
ABSL_FLAG(std::string, precision, "",
          "bf16, fp16 or fp32 (empty: the preset's)");
ABSL_FLAG(std::string, attention, "", "flash or unfused (empty: the preset's)");
ABSL_FLAG(std::string, out, "",
          "generate: where to write the trace (.json: JSON, else binary)");
ABSL_FLAG(std::string, hardware_out, "",
          "generate: also write the hardware descriptor here");
ABSL_FLAG(std::string, budget, "1.0",
          "activation-memory budget: a fraction of the all-keep peak (0.5 or "
          "50%), bytes "
          "(123456, 20GB, 20GiB) or 'unlimited'");
ABSL_FLAG(std::string, policy, "ideal",
          "simulate: ideal (all keep; ignores --budget: memory unlimited), "
          "all-keep, or all-swap");
ABSL_FLAG(std::string, plan, "",
          "simulate: replay this plan file instead of --policy");
ABSL_FLAG(std::string, plan_out, "",
          "simulate, plan: write the plan, with its schedule (.json: JSON, "
          "else binary)");
ABSL_FLAG(bool, barriers, false,
          "simulate, plan: vDNN-style per-layer barriers");
ABSL_FLAG(bool, json, false, "print the result as JSON");
ABSL_FLAG(bool, lp_bound, false,
          "plan, compare, frontier: also bound the iteration with the linear "
          "program (COIN-OR Clp) and report the larger bound");
ABSL_FLAG(
    std::string, timeline, "",
    "simulate: write the timeline here as Chrome trace-event JSON (Perfetto)");
ABSL_FLAG(double, guard, slackswap::PlannerOptions().guard_fraction,
          "plan: offloads must finish by (1 - guard) of the forward time, in "
          "[0, 0.9]");
ABSL_FLAG(std::string, ranking, "cost",
          "plan: swap candidates by recompute cost per byte ('cost') or "
          "'production' order");
ABSL_FLAG(bool, link_budget_pass, true,
          "plan: spend the link budget (false: recompute only)");
ABSL_FLAG(std::string, planner, "slackswap",
          "plan: the policy that plans (any name --policies accepts)");
ABSL_FLAG(std::string, budgets, "0.3,0.5,0.7",
          "compare: comma-separated budgets (as --budget)");
ABSL_FLAG(std::string, policies,
          "slackswap,vdnn,superneurons,swapadvisor,checkpointing",
          "compare: comma-separated policies (ideal, slackswap, "
          "slackswap-production-order, "
          "slackswap-no-link-budget, slackswap-barriers, vdnn, superneurons, "
          "swapadvisor, "
          "checkpointing, genetic-search)");
ABSL_FLAG(
    int64_t, genetic_evaluations, 10000,
    "compare, report: plans the genetic search replays (the optimality check)");
ABSL_FLAG(double, target, 0,
          "frontier: throughput ratio to reach, in (0, 1] (0: none)");
ABSL_FLAG(std::string, fractions, "",
          "frontier: comma-separated budget fractions (empty: 0.10, 0.15, ..., "
          "1.00)");
ABSL_FLAG(bool, quick, false,
          "report: the short version (one reduced model, two budgets)");
ABSL_FLAG(std::string, out_dir, "docs",
          "report: where results.md and results/ go");
ABSL_FLAG(std::string, server, "",
          "send the request to a slackswap-server at this address (empty: "
          "in-process)");
ABSL_FLAG(std::string, tls_ca, "", "--server over TLS, trusting this CA (PEM)");
ABSL_FLAG(std::string, tls_cert, "",
          "--server: client certificate (PEM), for mutual TLS");
ABSL_FLAG(std::string, tls_key, "", "--server: client private key (PEM)");
ABSL_FLAG(std::string, tls_server_name, "",
          "--server: name to check on the server certificate");
ABSL_FLAG(absl::Duration, deadline, absl::Seconds(60),
          "deadline for each request");
ABSL_FLAG(int, concurrency, 4, "bench-server: concurrent callers");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(10),
          "bench-server: how long to measure");
ABSL_FLAG(absl::Duration, warmup, absl::ZeroDuration(),
          "bench-server: run this long first, leaving those calls out of the "
          "report");
ABSL_FLAG(int64_t, requests, 0,
          "bench-server: stop after this many calls (0: --duration only)");
ABSL_FLAG(bool, local, false,
          "bench-server: call the planner in-process instead of --server");
ABSL_FLAG(int, planning_threads, 0,
          "bench-server --local: threads that plan the callers' calls in "
          "arrival order, as the server's do (0: one per usable CPU)");
ABSL_FLAG(int, server_pid, 0,
          "bench-server: the server's process id, when it runs on this "
          "machine: report its CPU time per call too");

namespace slackswap {
namespace {

constexpr char kUsage[] =
    R"(slackswap: activation-memory planning for deep-learning training

Usage:
  slackswap generate [--preset P] [--hardware H] [--batch N] [--seq N] [--layers N]
                     [--precision bf16|fp16|fp32] [--attention flash|unfused]
                     [--out FILE] [--hardware_out FILE]
      Build a trace from a model preset and print its summary.
  slackswap simulate [--trace FILE | --preset P ...] [--hardware H] [--budget B]
                     [--policy ideal|all-keep|all-swap | --plan FILE] [--barriers]
                     [--json] [--plan_out FILE] [--timeline FILE]
      Replay a plan in the event model and print its metrics.
  slackswap plan [--trace FILE | --preset P ...] [--hardware H] [--budget B]
                 [--guard G] [--ranking cost|production] [--link_budget_pass=false]
                 [--barriers] [--planner POLICY] [--lp_bound] [--json] [--plan_out FILE]
      Plan (with SlackSwap unless --planner names another policy): decisions,
      predicted metrics, lower bound, planning time.
  slackswap optimum [--trace FILE | --preset P ...] [--hardware H] [--budget B]
                    [--json] [--plan_out FILE]
      The exact optimum over every decision and issue point (branch and bound;
      traces of at most 16 tensors), printed as plan prints it; an infeasible
      answer is a proof that no plan fits.
  slackswap compare [--trace FILE | --preset P ...] [--hardware H] [--budgets B,B,...]
                    [--policies P,P,...] [--genetic_evaluations N] [--json]
      Every policy at every budget, one table.
  slackswap frontier [--trace FILE | --preset P ...] [--hardware H] [--target R]
                     [--fractions F,F,...] [--json]
      Throughput against budget, and the smallest budget that reaches a target.
  slackswap bench-server (--server ADDRESS [--server_pid PID]
                          | --local [--planning_threads N])
                         [--concurrency N] [--duration D] [--warmup D]
                         [--requests N] [--preset P ...] [--budget B]
      N concurrent callers planning the same trace: requests/s, latency, errors,
      CPU time per call (of the server too, given its process id). In-process,
      planning threads take the calls in arrival order, as the server's do.
  slackswap report [--out_dir DIR] [--quick] [--genetic_evaluations N]
      Reproduce the paper's evaluation: DIR/results.md and DIR/results/*.svg.
  slackswap presets
      The hardware presets and each workload preset's calibration figures, as
      Markdown tables (docs/workloads.md is made from this output).
  slackswap help
      This text. `slackswap --help` lists every flag.

Every subcommand but report and presets runs in-process, or with --server ADDRESS
against a slackswap-server (with --tls_ca, --tls_cert, --tls_key, --deadline).

Exit status: 0 on success, 2 on a usage error, 1 on any other error.)";

// Exit status 2: the command line itself is wrong (unknown command, flag
// value or preset). Exit status 1: an input file is wrong or the work failed.
constexpr int kUsageExit = 2;
constexpr int kFailureExit = 1;

// The message, then every field violation it carries when there are more
// than the one the message names (in-process and remote alike).
int ExitFor(const absl::Status& status, int exit_code) {
  std::cerr << "slackswap: " << status.message() << "\n";
  const std::vector<slackswap::FieldViolation> violations =
      slackswap::FieldViolationsOf(status);
  if (violations.size() > 1) {
    for (const slackswap::FieldViolation& v : violations)
      std::cerr << "  " << v.field << ": " << v.description << "\n";
  }
  return exit_code;
}

std::string Gigabytes(int64_t bytes) {
  if (bytes == kUnlimitedBytes) return "unlimited";
  return absl::StrFormat("%.2f GB", static_cast<double>(bytes) / 1e9);
}
std::string Millis(int64_t ns) {
  return absl::StrFormat("%.2f ms", static_cast<double>(ns) / 1e6);
}

bool LooksLikePath(const std::string& value) {
  return absl::StrContains(value, '/') || absl::StrContains(value, '.');
}

// --server and its TLS and deadline flags.
ConnectionOptions ConnectionFromFlags() {
  ConnectionOptions options;
  options.address = absl::GetFlag(FLAGS_server);
  options.ca_file = absl::GetFlag(FLAGS_tls_ca);
  options.client_cert_file = absl::GetFlag(FLAGS_tls_cert);
  options.client_key_file = absl::GetFlag(FLAGS_tls_key);
  options.server_name = absl::GetFlag(FLAGS_tls_server_name);
  options.deadline = absl::GetFlag(FLAGS_deadline);
  return options;
}

absl::StatusOr<std::unique_ptr<Backend>> MakeBackend() {
  if (absl::GetFlag(FLAGS_server).empty())
    return LocalBackend(absl::GetFlag(FLAGS_deadline));
  return RemoteBackend(ConnectionFromFlags());
}

// The generator request the flags describe.
absl::StatusOr<v1::GenerateTraceRequest> GenerateRequestFromFlags() {
  v1::GenerateTraceRequest r;
  r.set_workload_preset(absl::GetFlag(FLAGS_preset));
  r.set_hardware_preset(absl::GetFlag(FLAGS_hardware));
  r.set_batch(absl::GetFlag(FLAGS_batch));
  r.set_sequence_length(absl::GetFlag(FLAGS_seq));
  r.set_layers(absl::GetFlag(FLAGS_layers));
  const std::string precision = absl::GetFlag(FLAGS_precision);
  if (precision == "bf16") {
    r.set_precision(v1::PRECISION_BF16);
  } else if (precision == "fp16") {
    r.set_precision(v1::PRECISION_FP16);
  } else if (precision == "fp32") {
    r.set_precision(v1::PRECISION_FP32);
  } else if (!precision.empty()) {
    return absl::InvalidArgumentError("--precision must be bf16, fp16 or fp32");
  }
  const std::string attention = absl::GetFlag(FLAGS_attention);
  if (attention == "flash") {
    r.set_attention(v1::ATTENTION_FLASH);
  } else if (attention == "unfused") {
    r.set_attention(v1::ATTENTION_UNFUSED);
  } else if (!attention.empty()) {
    return absl::InvalidArgumentError("--attention must be flash or unfused");
  }
  if (WorkloadPreset(r.workload_preset()).status().code() ==
      absl::StatusCode::kNotFound) {
    return WorkloadPreset(r.workload_preset()).status();
  }
  return r;
}

absl::StatusOr<v1::Budget> ParseBudget(const std::string& text) {
  v1::Budget budget;
  double number = 0;
  if (text == "unlimited") {
    budget.set_unlimited(true);
  } else if (absl::EndsWith(text, "%") &&
             absl::SimpleAtod(text.substr(0, text.size() - 1), &number)) {
    budget.set_fraction_of_peak(number / 100);
  } else if (text.find_first_of(".eE") != std::string::npos &&
             absl::SimpleAtod(text, &number)) {
    budget.set_fraction_of_peak(number);
  } else {
    struct Unit {
      const char* suffix;
      double scale;
    };
    for (const Unit& unit : {Unit{"GiB", 1073741824.0}, Unit{"MiB", 1048576.0},
                             Unit{"GB", 1e9}, Unit{"MB", 1e6}, Unit{"", 1}}) {
      if (!absl::EndsWith(text, unit.suffix)) continue;
      if (absl::SimpleAtod(text.substr(0, text.size() - strlen(unit.suffix)),
                           &number)) {
        budget.set_bytes(static_cast<int64_t>(number * unit.scale));
        return budget;
      }
    }
    return absl::InvalidArgumentError(
        "--budget must be a fraction (0.5), a percentage (50%), bytes (20GB, "
        "20GiB, 123) or "
        "'unlimited'");
  }
  return budget;
}

// What simulate, plan, compare, frontier and bench-server all start from.
struct Inputs {
  v1::Trace trace_proto;
  v1::Hardware hardware_proto;
  Trace trace;  // validated locally too: for budgets and printing
  Hardware hardware;
  v1::Budget budget;
};

// Hardware, trace and budget from the flags, or the exit status.
absl::StatusOr<Inputs> LoadInputs(Backend& backend, int& exit_code) {
  Inputs in;
  auto fail = [&](const absl::Status& status, int code) {
    exit_code = ExitFor(status, code);
    return status;
  };
  const std::string hardware = absl::GetFlag(FLAGS_hardware);
  if (LooksLikePath(hardware)) {
    absl::Status read = ReadMessageFile(hardware, &in.hardware_proto);
    if (!read.ok()) return fail(read, kFailureExit);
  } else {
    absl::StatusOr<Hardware> preset = HardwarePreset(hardware);
    if (!preset.ok()) return fail(preset.status(), kUsageExit);
    in.hardware_proto = HardwareToProto(*preset);
  }
  absl::StatusOr<Hardware> converted = HardwareFromProto(in.hardware_proto);
  if (!converted.ok()) return fail(converted.status(), kFailureExit);
  in.hardware = *converted;
  absl::StatusOr<v1::Budget> budget = ParseBudget(absl::GetFlag(FLAGS_budget));
  if (!budget.ok()) return fail(budget.status(), kUsageExit);
  in.budget = *budget;
  if (!absl::GetFlag(FLAGS_trace).empty()) {
    absl::Status read =
        ReadMessageFile(absl::GetFlag(FLAGS_trace), &in.trace_proto);
    if (!read.ok()) return fail(read, kFailureExit);
  } else {
    absl::StatusOr<v1::GenerateTraceRequest> request =
        GenerateRequestFromFlags();
    if (!request.ok()) return fail(request.status(), kUsageExit);
    if (LooksLikePath(hardware)) {
      return fail(
          absl::InvalidArgumentError("a generated trace needs a hardware "
                                     "preset; give --trace with a hardware "
                                     "file"),
          kUsageExit);
    }
    absl::StatusOr<v1::GenerateTraceResponse> generated =
        backend.GenerateTrace(*request);
    if (!generated.ok()) return fail(generated.status(), kFailureExit);
    in.trace_proto = std::move(*generated->mutable_trace());
  }
  absl::StatusOr<Trace> trace = TraceFromProto(in.trace_proto);
  if (!trace.ok()) return fail(trace.status(), kFailureExit);
  in.trace = *std::move(trace);
  return in;
}

std::string OffloadLag(const v1::Metrics& m) {
  if (m.swapped_bytes() == 0) return "nothing offloaded";
  if (m.last_offload_lag_ns() <= 0) {
    return "offloads done " + Millis(-m.last_offload_lag_ns()) +
           " before the forward pass ended";
  }
  return "last offload ended " + Millis(m.last_offload_lag_ns()) +
         " after the forward pass";
}

void PrintMetrics(const Inputs& in, const std::string& policy,
                  const v1::Metrics& m) {
  const int64_t peak = AllKeepPeakBytes(in.trace);
  std::string budget = Gigabytes(m.budget_bytes());
  if (m.budget_bytes() != kUnlimitedBytes && peak > 0) {
    absl::StrAppend(
        &budget,
        absl::StrFormat(" (%.1f%% of the all-keep peak, %s)",
                        100.0 * m.budget_bytes() / peak, Gigabytes(peak)));
  }
  std::cout << absl::StrFormat(
      "trace        %s (%d ops, %d tensors, %s saved)\n"
      "hardware     %s (D2H %s/s, H2D %s/s)\n"
      "policy       %s\n"
      "budget       %s\n",
      in.trace.name, in.trace.num_ops(), in.trace.num_tensors(),
      Gigabytes(in.trace.total_tensor_bytes), in.hardware.name,
      Gigabytes(in.hardware.d2h_bytes_per_second),
      Gigabytes(in.hardware.h2d_bytes_per_second), policy, budget);
  if (m.outcome() != v1::SIMULATION_OUTCOME_COMPLETED) {
    std::cout << "outcome      INFEASIBLE: " << m.infeasibility().reason()
              << "\n";
    return;
  }
  std::cout << absl::StrFormat(
      "outcome      completed\n"
      "iteration    %s (ideal %s): %.1f%% of ideal throughput\n"
      "stall        prefetch %s, memory %s, barrier %s\n"
      "recompute    %s\n"
      "bytes        kept %s, swapped %s, recomputed %s; peak resident %s\n"
      "link         D2H busy %s, H2D busy %s; %s\n",
      Millis(m.iteration_ns()), Millis(m.ideal_ns()),
      100 * m.throughput_ratio(), Millis(m.prefetch_wait_ns()),
      Millis(m.memory_wait_ns()), Millis(m.barrier_wait_ns()),
      Millis(m.recompute_ns()), Gigabytes(m.kept_bytes()),
      Gigabytes(m.swapped_bytes()), Gigabytes(m.recomputed_bytes()),
      Gigabytes(m.peak_resident_bytes()), Millis(m.d2h_busy_ns()),
      Millis(m.h2d_busy_ns()), OffloadLag(m));
}

absl::Status WriteText(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return absl::PermissionDeniedError("cannot write " + path);
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok)
    return absl::DataLossError("short write to " + path);
  return absl::OkStatus();
}

int Generate(Backend& backend) {
  absl::StatusOr<v1::GenerateTraceRequest> request = GenerateRequestFromFlags();
  if (!request.ok()) return ExitFor(request.status(), kUsageExit);
  if (LooksLikePath(request->hardware_preset())) {
    return ExitFor(
        absl::InvalidArgumentError("generate: --hardware must name a preset"),
        kUsageExit);
  }
  if (!HardwarePreset(request->hardware_preset()).ok()) {
    return ExitFor(HardwarePreset(request->hardware_preset()).status(),
                   kUsageExit);
  }
  absl::StatusOr<v1::GenerateTraceResponse> response =
      backend.GenerateTrace(*request);
  if (!response.ok()) return ExitFor(response.status(), kFailureExit);
  const std::string out = absl::GetFlag(FLAGS_out);
  if (!out.empty()) {
    absl::Status written =
        WriteMessageFile(out, response->trace(), FormatForPath(out));
    if (!written.ok()) return ExitFor(written, kFailureExit);
  }
  const std::string hardware_out = absl::GetFlag(FLAGS_hardware_out);
  if (!hardware_out.empty()) {
    absl::Status written = WriteMessageFile(hardware_out, response->hardware(),
                                            FormatForPath(hardware_out));
    if (!written.ok()) return ExitFor(written, kFailureExit);
  }
  const v1::TraceSummary& s = response->summary();
  std::cout << absl::StrFormat(
      "trace              %s\n"
      "operators          %d\n"
      "saved tensors      %d\n"
      "saved bytes        %s\n"
      "forward FLOPs      %.3g\n"
      "FLOPs/saved byte   %.0f\n"
      "forward time       %s\n"
      "ideal iteration    %s\n"
      "hideable fraction  %.1f%% (D2H %s/s during the forward pass)\n",
      response->trace().name(), response->trace().operators_size(),
      response->trace().tensors_size(), Gigabytes(s.saved_bytes()),
      static_cast<double>(s.forward_flops()), s.flops_per_saved_byte(),
      Millis(s.forward_ns()), Millis(s.ideal_ns()), 100 * s.hideable_fraction(),
      Gigabytes(response->hardware().d2h_bytes_per_second()));
  if (!out.empty()) std::cout << "written to         " << out << "\n";
  return 0;
}

int SimulateCommand(Backend& backend) {
  int exit_code = 0;
  absl::StatusOr<Inputs> inputs = LoadInputs(backend, exit_code);
  if (!inputs.ok()) return exit_code;
  v1::SimulateRequest request;
  *request.mutable_trace() = inputs->trace_proto;
  *request.mutable_hardware() = inputs->hardware_proto;
  *request.mutable_budget() = inputs->budget;
  request.set_per_layer_barriers(absl::GetFlag(FLAGS_barriers));
  request.set_include_timeline(!absl::GetFlag(FLAGS_timeline).empty());
  std::string policy = absl::GetFlag(FLAGS_policy);
  if (!absl::GetFlag(FLAGS_plan).empty()) {
    absl::Status read =
        ReadMessageFile(absl::GetFlag(FLAGS_plan), request.mutable_plan());
    if (!read.ok()) return ExitFor(read, kFailureExit);
    policy = "plan " + absl::GetFlag(FLAGS_plan);
  } else {
    Plan plan;
    if (policy == "ideal") {
      plan = IdealPlan(inputs->trace);
      request.mutable_budget()->set_unlimited(true);
    } else if (policy == "all-keep") {
      plan = Plan::AllKeep(inputs->trace);
    } else if (policy == "all-swap") {
      plan = AllSwapPlan(inputs->trace);
    } else {
      return ExitFor(absl::InvalidArgumentError(
                         "--policy must be ideal, all-keep or all-swap"),
                     kUsageExit);
    }
    *request.mutable_plan() =
        PlanToProto(plan, DeriveSchedule(inputs->trace, plan));
  }
  absl::StatusOr<int64_t> budget =
      ResolveBudget(inputs->trace, request.budget());
  if (!budget.ok()) return ExitFor(budget.status(), kUsageExit);
  absl::StatusOr<v1::SimulateResponse> response = backend.Simulate(request);
  if (!response.ok()) return ExitFor(response.status(), kFailureExit);
  if (!absl::GetFlag(FLAGS_plan_out).empty()) {
    const std::string path = absl::GetFlag(FLAGS_plan_out);
    absl::Status written =
        WriteMessageFile(path, response->plan(), FormatForPath(path));
    if (!written.ok()) return ExitFor(written, kFailureExit);
  }
  if (request.include_timeline()) {
    absl::Status written =
        WriteText(absl::GetFlag(FLAGS_timeline),
                  ChromeTraceJson(inputs->trace_proto, response->timeline(),
                                  response->metrics().iteration_ns()));
    if (!written.ok()) return ExitFor(written, kFailureExit);
  }
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ToJson(response->metrics()) << "\n";
  } else {
    PrintMetrics(*inputs, policy, response->metrics());
  }
  return 0;
}

absl::StatusOr<v1::PlannerOptions> PlannerOptionsFromFlags() {
  v1::PlannerOptions options;
  options.set_guard_fraction(absl::GetFlag(FLAGS_guard));
  if (absl::GetFlag(FLAGS_lp_bound)) options.set_linear_program_bound(true);
  const std::string ranking = absl::GetFlag(FLAGS_ranking);
  if (ranking == "cost") {
    options.set_ranking(v1::SWAP_RANKING_RECOMPUTE_COST_PER_BYTE);
  } else if (ranking == "production") {
    options.set_ranking(v1::SWAP_RANKING_PRODUCTION_ORDER);
  } else {
    return absl::InvalidArgumentError("--ranking must be cost or production");
  }
  options.set_link_budget_pass(absl::GetFlag(FLAGS_link_budget_pass));
  options.set_per_layer_barriers(absl::GetFlag(FLAGS_barriers));
  SLACKSWAP_RETURN_IF_ERROR(PlannerOptionsFromProto(options).status());
  return options;
}

absl::StatusOr<v1::PlanRequest> PlanRequestFromFlags(const Inputs& in) {
  v1::PlanRequest request;
  *request.mutable_trace() = in.trace_proto;
  *request.mutable_hardware() = in.hardware_proto;
  *request.mutable_budget() = in.budget;
  SLACKSWAP_ASSIGN_OR_RETURN(*request.mutable_options(),
                             PlannerOptionsFromFlags());
  SLACKSWAP_ASSIGN_OR_RETURN(Policy policy,
                             PolicyFromName(absl::GetFlag(FLAGS_planner)));
  request.set_policy(PolicyToProto(policy));
  SLACKSWAP_RETURN_IF_ERROR(ResolveBudget(in.trace, in.budget).status());
  return request;
}

int PlanCommand(Backend& backend) {
  int exit_code = 0;
  absl::StatusOr<Inputs> inputs = LoadInputs(backend, exit_code);
  if (!inputs.ok()) return exit_code;
  absl::StatusOr<v1::PlanRequest> request = PlanRequestFromFlags(*inputs);
  if (!request.ok()) return ExitFor(request.status(), kUsageExit);
  absl::StatusOr<v1::PlanResponse> response = backend.Plan(*request);
  if (!response.ok()) return ExitFor(response.status(), kFailureExit);
  const v1::PlanningReport& report = response->report();
  if (!absl::GetFlag(FLAGS_plan_out).empty()) {
    const std::string path = absl::GetFlag(FLAGS_plan_out);
    absl::Status written =
        WriteMessageFile(path, report.plan(), FormatForPath(path));
    if (!written.ok()) return ExitFor(written, kFailureExit);
  }
  if (absl::GetFlag(FLAGS_json)) {
    // The report is deterministic; the planning time is not, so it stays out.
    v1::PlanningReport printed = report;
    printed.clear_plan();
    std::cout << ToJson(printed) << "\n";
    return 0;
  }
  const double planning_ms =
      static_cast<double>(response->planning_time_ns()) / 1e6;
  if (report.outcome() != v1::PLAN_OUTCOME_PLANNED) {
    std::cout << "outcome      INFEASIBLE: " << report.reason() << "\n";
    std::cout << absl::StrFormat("planner      planned in %.2f ms\n",
                                 planning_ms);
    return 0;
  }
  PrintMetrics(*inputs, absl::GetFlag(FLAGS_planner), report.metrics());
  const v1::PlannerStatistics& st = report.statistics();
  std::cout << absl::StrFormat(
      "lower bound  %s: the plan is within %.2f%% of any plan's iteration "
      "time\n"
      "planner      %d swaps admitted, %d recomputes, %d blocks, %d repair "
      "rounds, %d repairs; "
      "planned in %.2f ms\n",
      Millis(report.lower_bound_ns()), 100 * report.gap_to_lower_bound(),
      st.swaps_admitted(), st.recomputes_marked(), st.blocks_recomputed(),
      st.repair_iterations(), st.repairs(), planning_ms);
  return 0;
}

int CompareCommand(Backend& backend) {
  int exit_code = 0;
  absl::StatusOr<Inputs> inputs = LoadInputs(backend, exit_code);
  if (!inputs.ok()) return exit_code;
  v1::CompareRequest request;
  *request.mutable_trace() = inputs->trace_proto;
  *request.mutable_hardware() = inputs->hardware_proto;
  for (absl::string_view text :
       absl::StrSplit(absl::GetFlag(FLAGS_budgets), ',')) {
    absl::StatusOr<v1::Budget> budget = ParseBudget(std::string(text));
    if (!budget.ok()) return ExitFor(budget.status(), kUsageExit);
    absl::Status resolved = ResolveBudget(inputs->trace, *budget).status();
    if (!resolved.ok()) return ExitFor(resolved, kUsageExit);
    *request.add_budgets() = *budget;
  }
  for (absl::string_view name :
       absl::StrSplit(absl::GetFlag(FLAGS_policies), ',')) {
    absl::StatusOr<Policy> policy = PolicyFromName(name);
    if (!policy.ok()) return ExitFor(policy.status(), kUsageExit);
    request.add_policies(PolicyToProto(*policy));
  }
  request.set_genetic_search_evaluations(
      absl::GetFlag(FLAGS_genetic_evaluations));
  absl::StatusOr<v1::CompareResponse> response = backend.Compare(request);
  if (!response.ok()) return ExitFor(response.status(), kFailureExit);
  const v1::Comparison& comparison = response->comparison();
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ToJson(comparison) << "\n";
    return 0;
  }
  std::cout << absl::StrFormat("trace %s on %s; ideal %s; all-keep peak %s\n\n",
                               inputs->trace.name, inputs->hardware.name,
                               Millis(comparison.ideal_ns()),
                               Gigabytes(comparison.all_keep_peak_bytes()));
  std::cout << absl::StrFormat("%-8s %-27s %9s %12s %10s %10s %9s %9s %9s\n",
                               "budget", "policy", "% ideal", "iteration",
                               "stall", "recompute", "swapped", "recomp.",
                               "vs bound");
  for (const v1::ComparisonEntry& e : comparison.entries()) {
    const v1::PlanningReport& r = e.report();
    const v1::Metrics& m = r.metrics();
    absl::StatusOr<Policy> policy = PolicyFromProto(e.policy(), "policy");
    const std::string name = policy.ok() ? PolicyName(*policy) : "?";
    const std::string budget =
        absl::StrFormat("%.0f%%", 100 * e.budget_fraction_of_peak());
    if (r.outcome() != v1::PLAN_OUTCOME_PLANNED) {
      std::cout << absl::StrFormat("%-8s %-27s %9s  %s\n", budget, name, "-",
                                   "infeasible: " + r.reason().substr(0, 60));
      continue;
    }
    std::cout << absl::StrFormat(
        "%-8s %-27s %8.1f%% %12s %10s %10s %9s %9s %8.2f%%\n", budget, name,
        100 * m.throughput_ratio(), Millis(m.iteration_ns()),
        Millis(m.prefetch_wait_ns() + m.memory_wait_ns() + m.barrier_wait_ns()),
        Millis(m.recompute_ns()), Gigabytes(m.swapped_bytes()),
        Gigabytes(m.recomputed_bytes()), 100 * r.gap_to_lower_bound());
  }
  return 0;
}

int FrontierCommand(Backend& backend) {
  int exit_code = 0;
  absl::StatusOr<Inputs> inputs = LoadInputs(backend, exit_code);
  if (!inputs.ok()) return exit_code;
  v1::FrontierRequest request;
  *request.mutable_trace() = inputs->trace_proto;
  *request.mutable_hardware() = inputs->hardware_proto;
  request.set_target_throughput_ratio(absl::GetFlag(FLAGS_target));
  const std::string fractions = absl::GetFlag(FLAGS_fractions);
  if (!fractions.empty()) {
    for (absl::string_view text : absl::StrSplit(fractions, ',')) {
      double f = 0;
      if (!absl::SimpleAtod(text, &f)) {
        return ExitFor(
            absl::InvalidArgumentError("--fractions must be numbers in (0, 1]"),
            kUsageExit);
      }
      request.add_budget_fractions(f);
    }
  }
  absl::StatusOr<v1::PlannerOptions> options = PlannerOptionsFromFlags();
  if (!options.ok()) return ExitFor(options.status(), kUsageExit);
  *request.mutable_options() = *options;
  absl::StatusOr<v1::FrontierResponse> response = backend.Frontier(request);
  if (!response.ok()) {
    const int code =
        response.status().code() == absl::StatusCode::kInvalidArgument
            ? kUsageExit
            : kFailureExit;
    return ExitFor(response.status(), code);
  }
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ToJson(*response) << "\n";
    return 0;
  }
  std::cout << absl::StrFormat("trace %s on %s; ideal %s; all-keep peak %s\n",
                               inputs->trace.name, inputs->hardware.name,
                               Millis(response->ideal_ns()),
                               Gigabytes(response->all_keep_peak_bytes()));
  std::cout << absl::StrFormat(
      "no plan fits below %s (proven); the curve starts where SlackSwap "
      "first plans\n\n",
      Gigabytes(response->proven_floor_bytes()));
  std::cout << absl::StrFormat("%-8s %12s %9s %12s %10s %10s\n", "budget",
                               "bytes", "% ideal", "iteration", "swapped",
                               "recomp.");
  auto row = [](const v1::FrontierPoint& p) {
    if (p.outcome() != v1::PLAN_OUTCOME_PLANNED) {
      return absl::StrFormat("%6.1f%%  %12s %9s\n",
                             100 * p.budget_fraction_of_peak(),
                             Gigabytes(p.budget_bytes()), "infeasible");
    }
    return absl::StrFormat(
        "%6.1f%%  %12s %8.1f%% %12s %10s %10s\n",
        100 * p.budget_fraction_of_peak(), Gigabytes(p.budget_bytes()),
        100 * p.throughput_ratio(), Millis(p.iteration_ns()),
        Gigabytes(p.swapped_bytes()), Gigabytes(p.recomputed_bytes()));
  };
  for (const v1::FrontierPoint& p : response->points()) std::cout << row(p);
  if (request.target_throughput_ratio() > 0) {
    if (response->target_reached()) {
      std::cout << absl::StrFormat(
                       "\nsmallest budget reaching %.1f%% of ideal:\n",
                       100 * request.target_throughput_ratio())
                << row(response->smallest_budget());
    } else {
      std::cout << absl::StrFormat("\nno budget reaches %.1f%% of ideal\n",
                                   100 * request.target_throughput_ratio());
    }
  }
  return 0;
}

int BenchServer(Backend& backend) {
  const bool local = absl::GetFlag(FLAGS_local);
  if (local == !absl::GetFlag(FLAGS_server).empty()) {
    return ExitFor(absl::InvalidArgumentError(
                       "bench-server needs --server ADDRESS or --local"),
                   kUsageExit);
  }
  LoadOptions options;
  options.concurrency = absl::GetFlag(FLAGS_concurrency);
  options.duration = absl::GetFlag(FLAGS_duration);
  options.warmup = absl::GetFlag(FLAGS_warmup);
  options.max_requests = absl::GetFlag(FLAGS_requests);
  options.deadline = absl::GetFlag(FLAGS_deadline);
  options.server_pid = absl::GetFlag(FLAGS_server_pid);
  options.planning_threads = absl::GetFlag(FLAGS_planning_threads);
  if (options.warmup < absl::ZeroDuration()) {
    return ExitFor(absl::InvalidArgumentError("--warmup must be >= 0"),
                   kUsageExit);
  }
  if (options.concurrency < 1 || options.concurrency > 1024) {
    return ExitFor(
        absl::InvalidArgumentError("--concurrency must be in [1, 1024]"),
        kUsageExit);
  }
  if (options.planning_threads != 0) {
    if (!local) {
      return ExitFor(absl::InvalidArgumentError(
                         "--planning_threads goes with --local (a server "
                         "has its own --planning_threads)"),
                     kUsageExit);
    }
    if (options.planning_threads < 0 || options.planning_threads > 1024) {
      return ExitFor(
          absl::InvalidArgumentError("--planning_threads must be in [0, 1024]"),
          kUsageExit);
    }
  }
  if (options.server_pid != 0) {
    if (local) {
      return ExitFor(
          absl::InvalidArgumentError("--server_pid goes with --server"),
          kUsageExit);
    }
    const absl::StatusOr<double> cpu = ProcessCpuSeconds(options.server_pid);
    if (!cpu.ok()) {
      return ExitFor(absl::InvalidArgumentError(absl::StrCat(
                         "--server_pid: ", cpu.status().message())),
                     kUsageExit);
    }
  }
  int exit_code = 0;
  absl::StatusOr<Inputs> inputs = LoadInputs(backend, exit_code);
  if (!inputs.ok()) return exit_code;
  absl::StatusOr<v1::PlanRequest> request = PlanRequestFromFlags(*inputs);
  if (!request.ok()) return ExitFor(request.status(), kUsageExit);
  std::shared_ptr<grpc::Channel> channel;
  if (!local) {
    ConnectionOptions connection = ConnectionFromFlags();
    connection.retries = false;
    absl::StatusOr<std::shared_ptr<grpc::Channel>> made =
        MakeChannel(connection);
    if (!made.ok()) return ExitFor(made.status(), kFailureExit);
    channel = *made;
  }
  const LoadReport r = RunLoad(channel, *request, options);
  std::vector<std::string> errors;
  for (const auto& [code, n] : r.errors)
    errors.push_back(absl::StrCat(code, "=", n));
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << absl::StrFormat(
        "{\"target\": \"%s\", \"concurrency\": %d, \"calls\": %d, \"ok\": %d, "
        "\"seconds\": %.3f, "
        "\"requests_per_second\": %.2f, \"p50_ms\": %.3f, \"p90_ms\": %.3f, "
        "\"p99_ms\": %.3f, "
        "\"max_ms\": %.3f, \"cpu_seconds\": %.6f, \"server_cpu_seconds\": %s, "
        "\"planning_threads\": %s, \"errors\": {%s}}\n",
        local ? "in-process" : "server", options.concurrency, r.calls, r.ok,
        r.seconds, r.requests_per_second, r.p50_ms, r.p90_ms, r.p99_ms,
        r.max_ms, r.cpu_seconds,
        r.server_cpu_seconds.has_value()
            ? absl::StrFormat("%.3f", *r.server_cpu_seconds)
            : "null",
        local ? absl::StrCat(r.planning_threads) : "null",
        absl::StrJoin(r.errors, ", ", [](std::string* out, const auto& e) {
          absl::StrAppend(out, "\"", e.first, "\": ", e.second);
        }));
    return 0;
  }
  std::cout << absl::StrFormat(
      "target       %s\nconcurrency  %d\ncalls        %d in %.2f s (%d ok)\n"
      "throughput   %.1f plans/s\nlatency      p50 %.2f ms, p90 %.2f ms, p99 "
      "%.2f ms, max "
      "%.2f ms\nerrors       %s\n",
      local ? absl::StrCat("in-process, ", r.planning_threads,
                           " planning threads")
            : absl::GetFlag(FLAGS_server),
      options.concurrency, r.calls, r.seconds, r.ok, r.requests_per_second,
      r.p50_ms, r.p90_ms, r.p99_ms, r.max_ms,
      errors.empty() ? "none" : absl::StrJoin(errors, ", "));
  if (r.calls > 0) {
    const double per_call = 1e3 / static_cast<double>(r.calls);
    std::cout << absl::StrFormat("cpu          %.3f ms per call here",
                                 r.cpu_seconds * per_call);
    if (r.server_cpu_seconds.has_value()) {
      std::cout << absl::StrFormat(", %.3f ms per call in process %d",
                                   *r.server_cpu_seconds * per_call,
                                   options.server_pid);
    }
    std::cout << "\n";
  }
  return 0;
}

absl::Status PrintCalibrationRow(const std::string& preset,
                                 int64_t sequence_length,
                                 const std::string& gpu) {
  SLACKSWAP_ASSIGN_OR_RETURN(WorkloadSpec spec, WorkloadPreset(preset));
  if (sequence_length > 0) spec.sequence_length = sequence_length;
  SLACKSWAP_ASSIGN_OR_RETURN(Hardware hw, HardwarePreset(gpu));
  SLACKSWAP_ASSIGN_OR_RETURN(v1::Trace trace, GenerateTrace(spec, hw));
  const TraceSummary s = Summarize(trace, hw);
  const std::string shape =
      spec.family == ModelFamily::kVgg16
          ? absl::StrCat("batch ", spec.batch, ", ", spec.image_size, "x",
                         spec.image_size)
          : absl::StrCat("batch ", spec.batch, " x ", spec.sequence_length);
  std::cout << absl::StrFormat(
      "| %s | %s | %s | %d | %s | %.0f | %s | %s | %.1f%% |\n", preset, shape,
      gpu, trace.operators_size(), Gigabytes(s.saved_bytes),
      s.flops_per_saved_byte, Millis(s.forward_ns), Millis(s.iteration_ns),
      100 * s.hideable_fraction);
  return absl::OkStatus();
}

int Presets() {
  std::cout
      << "| Hardware | D2H GB/s | H2D GB/s | Latency us | GPU memory GiB | "
         "Matmul TFLOP/s | HBM GB/s |\n|---|---|---|---|---|---|---|\n";
  for (const std::string& name : HardwarePresetNames()) {
    const Hardware h = *HardwarePreset(name);
    std::cout << absl::StrFormat(
        "| %s | %.1f | %.1f | %.0f | %.0f | %.1f | %.0f |\n", name,
        h.d2h_bytes_per_second / 1e9, h.h2d_bytes_per_second / 1e9,
        h.transfer_latency_ns / 1e3, h.gpu_memory_bytes / 1073741824.0,
        h.matmul_flops_per_second / 1e12, h.hbm_bytes_per_second / 1e9);
  }
  std::cout << "\n| Workload | Shape | Hardware | Ops | Saved | FLOPs/saved "
               "byte | Forward | "
               "Ideal iteration | Hideable "
               "|\n|---|---|---|---|---|---|---|---|---|\n";
  struct Row {
    const char* preset;
    int64_t sequence_length;
    const char* gpu;
  };
  const Row rows[] = {
      {"gpt2-xl", 0, "a100"},      {"bert-large", 0, "a100"},
      {"llama-7b", 2048, "a100"},  {"llama-7b", 4096, "a100"},
      {"llama-7b", 8192, "a100"},  {"llama-7b", 16384, "a100"},
      {"llama-7b", 32768, "a100"}, {"vgg16", 0, "titan-x"},
      {"vgg16", 0, "a100"},        {"gpt2-xl", 0, "v100"},
      {"gpt2-xl", 0, "h100"},      {"gpt2-xl", 0, "gh200"},
  };
  for (const Row& row : rows) {
    absl::Status status =
        PrintCalibrationRow(row.preset, row.sequence_length, row.gpu);
    if (!status.ok()) return ExitFor(status, kFailureExit);
  }
  return 0;
}

int Report() {
  ReportOptions options;
  options.out_dir = absl::GetFlag(FLAGS_out_dir);
  options.quick = absl::GetFlag(FLAGS_quick);
  options.genetic_evaluations = absl::GetFlag(FLAGS_genetic_evaluations);
  if (options.quick) {
    options.genetic_evaluations =
        std::min<int64_t>(options.genetic_evaluations, 600);
    options.swapadvisor_evaluations = 300;
  }
  const absl::Status status = WriteReport(options);
  if (!status.ok()) return ExitFor(status, kFailureExit);
  std::cout << "wrote " << options.out_dir << "/results.md\n";
  return 0;
}

}  // namespace
}  // namespace slackswap

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(slackswap::kUsage);
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  slackswap::KeepFreedMemoryForReuse();
  if (positional.size() != 2) {
    std::cerr << slackswap::kUsage << "\n";
    return 2;
  }
  const std::string command = positional[1];
  if (command == "help") {
    std::cout << slackswap::kUsage << "\n";
    return 0;
  }
  if (command == "presets") return slackswap::Presets();
  if (command == "report") return slackswap::Report();
  using Command = int (*)(slackswap::Backend&);
  Command run = nullptr;
  if (command == "generate") run = slackswap::Generate;
  if (command == "simulate") run = slackswap::SimulateCommand;
  if (command == "plan") run = slackswap::PlanCommand;
  if (command == "optimum") {
    absl::SetFlag(&FLAGS_planner, std::string("optimum"));
    run = slackswap::PlanCommand;
  }
  if (command == "compare") run = slackswap::CompareCommand;
  if (command == "frontier") run = slackswap::FrontierCommand;
  if (command == "bench-server") run = slackswap::BenchServer;
  if (run == nullptr) {
    std::cerr << "slackswap: unknown command '" << command.substr(0, 40)
              << "'; run 'slackswap help'\n";
    return 2;
  }
  absl::StatusOr<std::unique_ptr<slackswap::Backend>> backend =
      slackswap::MakeBackend();
  if (!backend.ok()) return slackswap::ExitFor(backend.status(), 1);
  return run(**backend);
}
