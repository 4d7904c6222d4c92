// slackswap: the command-line tool. Works in-process, with no server.
//
//   slackswap generate --preset gpt2-xl --hardware a100 --out trace.json
//   slackswap simulate --trace trace.json --hardware a100 --budget 0.5 --policy
//   all-swap
//
// Run `slackswap help` for every subcommand and flag.
#include <cstdio>
#include <iostream>
#include <optional>
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
#include "client/chrome_trace.h"
#include "client/report.h"
#include "planner/basic_plans.h"
#include "planner/comparison.h"
#include "planner/planner_proto.h"
#include "planner/slackswap.h"
#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/proto_convert.h"
#include "simulator/status_macros.h"
#include "simulator/trace_io.h"
#include "simulator/workload.h"

ABSL_FLAG(std::string, preset, "gpt2-xl",
          "workload preset: bert-large, gpt2-xl, llama-7b, vgg16 (ignored with "
          "--trace)");
ABSL_FLAG(std::string, trace, "",
          "trace file (binary protobuf or JSON) instead of --preset");
ABSL_FLAG(
    std::string, hardware, "a100",
    "hardware preset (titan-x, v100, a100, h100, gh200) or a Hardware file");
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
          "all-keep, or "
          "all-swap");
ABSL_FLAG(std::string, plan, "",
          "simulate: replay this plan file instead of --policy");
ABSL_FLAG(std::string, plan_out, "",
          "simulate: write the replayed plan, with its schedule");
ABSL_FLAG(bool, barriers, false,
          "simulate, plan: vDNN-style per-layer barriers");
ABSL_FLAG(bool, json, false, "simulate, plan: print the result as JSON");
ABSL_FLAG(double, guard, slackswap::PlannerOptions().guard_fraction,
          "plan: offloads must finish by (1 - guard) of the forward time, in "
          "[0, 0.9]");
ABSL_FLAG(std::string, ranking, "cost",
          "plan: swap candidates by recompute cost per byte ('cost') or "
          "'production' order");
ABSL_FLAG(bool, link_budget_pass, true,
          "plan: spend the link budget (false: recompute only)");
ABSL_FLAG(bool, quick, false,
          "report: the short version (one reduced model, two budgets)");
ABSL_FLAG(std::string, out_dir, "docs",
          "report: where results.md and results/ go");
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
    "compare, plan: plans the genetic search replays (the optimality check)");
ABSL_FLAG(
    std::string, timeline, "",
    "simulate: write the timeline here as Chrome trace-event JSON (Perfetto)");

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
                 [--barriers] [--planner POLICY] [--json] [--plan_out FILE]
      Plan (with SlackSwap unless --planner names another policy): decisions,
      predicted metrics, lower bound, planning time.
  slackswap compare [--trace FILE | --preset P ...] [--hardware H] [--budgets B,B,...]
                    [--policies P,P,...] [--genetic_evaluations N] [--json]
      Every policy at every budget, one table.
  slackswap report [--out_dir DIR] [--quick] [--genetic_evaluations N]
      Reproduce the paper's evaluation: DIR/results.md and DIR/results/*.svg.
  slackswap presets
      The hardware presets and each workload preset's calibration figures, as
      Markdown tables (docs/workloads.md is made from this output).
  slackswap help
      This text. `slackswap --help` lists every flag.

Exit status: 0 on success, 2 on a usage error, 1 on any other error.)";

struct UsageError {
  std::string message;
};

std::string Gigabytes(int64_t bytes) {
  if (bytes == kUnlimitedBytes) return "unlimited";
  return absl::StrFormat("%.2f GB", static_cast<double>(bytes) / 1e9);
}
std::string Millis(int64_t ns) {
  return absl::StrFormat("%.2f ms", static_cast<double>(ns) / 1e6);
}

// Exit status 2: the command line itself is wrong (unknown command, flag
// value or preset). Exit status 1: an input file is wrong or the work failed.
constexpr int kUsageExit = 2;
constexpr int kFailureExit = 1;

bool LooksLikePath(const std::string& value) {
  return absl::StrContains(value, '/') || absl::StrContains(value, '.');
}

absl::StatusOr<Hardware> LoadHardware() {
  const std::string value = absl::GetFlag(FLAGS_hardware);
  if (!LooksLikePath(value)) return HardwarePreset(value);
  v1::Hardware proto;
  SLACKSWAP_RETURN_IF_ERROR(ReadMessageFile(value, &proto));
  return HardwareFromProto(proto);
}

int ExitFor(const absl::Status& status, int exit_code) {
  std::cerr << "slackswap: " << status.message() << "\n";
  return exit_code;
}

int HardwareExit(const absl::Status& status) {
  return ExitFor(status, LooksLikePath(absl::GetFlag(FLAGS_hardware))
                             ? kFailureExit
                             : kUsageExit);
}

absl::StatusOr<WorkloadSpec> SpecFromFlags() {
  SLACKSWAP_ASSIGN_OR_RETURN(WorkloadSpec spec,
                             WorkloadPreset(absl::GetFlag(FLAGS_preset)));
  if (absl::GetFlag(FLAGS_batch) != 0) spec.batch = absl::GetFlag(FLAGS_batch);
  if (absl::GetFlag(FLAGS_seq) != 0)
    spec.sequence_length = absl::GetFlag(FLAGS_seq);
  if (absl::GetFlag(FLAGS_layers) != 0)
    spec.layers = absl::GetFlag(FLAGS_layers);
  const std::string precision = absl::GetFlag(FLAGS_precision);
  if (precision == "bf16") {
    spec.precision = Precision::kBf16;
  } else if (precision == "fp16") {
    spec.precision = Precision::kFp16;
  } else if (precision == "fp32") {
    spec.precision = Precision::kFp32;
  } else if (!precision.empty()) {
    return absl::InvalidArgumentError("--precision must be bf16, fp16 or fp32");
  }
  const std::string attention = absl::GetFlag(FLAGS_attention);
  if (attention == "flash") {
    spec.flash_attention = true;
  } else if (attention == "unfused") {
    spec.flash_attention = false;
  } else if (!attention.empty()) {
    return absl::InvalidArgumentError("--attention must be flash or unfused");
  }
  return spec;
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

int Generate() {
  absl::StatusOr<Hardware> hardware = LoadHardware();
  if (!hardware.ok()) return HardwareExit(hardware.status());
  absl::StatusOr<WorkloadSpec> spec = SpecFromFlags();
  if (!spec.ok()) return ExitFor(spec.status(), kUsageExit);
  absl::StatusOr<v1::Trace> trace = GenerateTrace(*spec, *hardware);
  if (!trace.ok()) return ExitFor(trace.status(), kFailureExit);
  const std::string out = absl::GetFlag(FLAGS_out);
  if (!out.empty()) {
    absl::Status written = WriteMessageFile(out, *trace, FormatForPath(out));
    if (!written.ok()) return ExitFor(written, kFailureExit);
  }
  const std::string hardware_out = absl::GetFlag(FLAGS_hardware_out);
  if (!hardware_out.empty()) {
    absl::Status written = WriteMessageFile(
        hardware_out, HardwareToProto(*hardware), FormatForPath(hardware_out));
    if (!written.ok()) return ExitFor(written, kFailureExit);
  }
  const TraceSummary s = Summarize(*trace, *hardware);
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
      trace->name(), trace->operators_size(), trace->tensors_size(),
      Gigabytes(s.saved_bytes), static_cast<double>(s.forward_flops),
      s.flops_per_saved_byte, Millis(s.forward_ns), Millis(s.iteration_ns),
      100 * s.hideable_fraction, Gigabytes(hardware->d2h_bytes_per_second));
  if (!out.empty()) std::cout << "written to         " << out << "\n";
  return 0;
}

std::string OffloadLag(const SimulationResult& r) {
  if (r.swapped_bytes == 0) return "nothing offloaded";
  if (r.last_offload_lag_ns <= 0) {
    return "offloads done " + Millis(-r.last_offload_lag_ns) +
           " before the forward pass ended";
  }
  return "last offload ended " + Millis(r.last_offload_lag_ns) +
         " after the forward pass";
}

void PrintMetrics(const Trace& trace, const Hardware& hardware,
                  const std::string& policy, const SimulationResult& r) {
  const int64_t peak = AllKeepPeakBytes(trace);
  std::string budget = Gigabytes(r.budget_bytes);
  if (r.budget_bytes != kUnlimitedBytes && peak > 0) {
    absl::StrAppend(
        &budget,
        absl::StrFormat(" (%.1f%% of the all-keep peak, %s)",
                        100.0 * r.budget_bytes / peak, Gigabytes(peak)));
  }
  std::cout << absl::StrFormat(
      "trace        %s (%d ops, %d tensors, %s saved)\n"
      "hardware     %s (D2H %s/s, H2D %s/s)\n"
      "policy       %s\n"
      "budget       %s\n",
      trace.name, trace.num_ops(), trace.num_tensors(),
      Gigabytes(trace.total_tensor_bytes), hardware.name,
      Gigabytes(hardware.d2h_bytes_per_second),
      Gigabytes(hardware.h2d_bytes_per_second), policy, budget);
  if (!r.feasible) {
    std::cout << "outcome      INFEASIBLE: " << r.infeasibility.reason << "\n";
    return;
  }
  std::cout << absl::StrFormat(
      "outcome      completed\n"
      "iteration    %s (ideal %s): %.1f%% of ideal throughput\n"
      "stall        prefetch %s, memory %s, barrier %s\n"
      "recompute    %s\n"
      "bytes        kept %s, swapped %s, recomputed %s; peak resident %s\n"
      "link         D2H busy %s, H2D busy %s; %s\n",
      Millis(r.iteration_ns), Millis(r.ideal_ns), 100 * r.throughput_ratio,
      Millis(r.prefetch_wait_ns), Millis(r.memory_wait_ns),
      Millis(r.barrier_wait_ns), Millis(r.recompute_ns),
      Gigabytes(r.kept_bytes), Gigabytes(r.swapped_bytes),
      Gigabytes(r.recomputed_bytes), Gigabytes(r.peak_resident_bytes),
      Millis(r.d2h_busy_ns), Millis(r.h2d_busy_ns), OffloadLag(r));
}

struct Inputs {
  Hardware hardware;
  Trace trace;
  v1::Budget budget;
};

// Hardware, trace and budget from the flags; on failure, the exit status.
absl::StatusOr<Inputs> LoadInputs(int& exit_code) {
  Inputs in;
  absl::StatusOr<Hardware> hardware = LoadHardware();
  if (!hardware.ok())
    return exit_code = HardwareExit(hardware.status()), hardware.status();
  in.hardware = *std::move(hardware);
  absl::StatusOr<v1::Budget> budget = ParseBudget(absl::GetFlag(FLAGS_budget));
  if (!budget.ok())
    return exit_code = ExitFor(budget.status(), kUsageExit), budget.status();
  in.budget = *budget;
  v1::Trace proto;
  if (!absl::GetFlag(FLAGS_trace).empty()) {
    absl::Status read = ReadMessageFile(absl::GetFlag(FLAGS_trace), &proto);
    if (!read.ok()) return exit_code = ExitFor(read, kFailureExit), read;
  } else {
    absl::StatusOr<WorkloadSpec> spec = SpecFromFlags();
    if (!spec.ok())
      return exit_code = ExitFor(spec.status(), kUsageExit), spec.status();
    absl::StatusOr<v1::Trace> generated = GenerateTrace(*spec, in.hardware);
    if (!generated.ok()) {
      return exit_code = ExitFor(generated.status(), kFailureExit),
             generated.status();
    }
    proto = *std::move(generated);
  }
  absl::StatusOr<Trace> trace = TraceFromProto(proto);
  if (!trace.ok())
    return exit_code = ExitFor(trace.status(), kFailureExit), trace.status();
  in.trace = *std::move(trace);
  return in;
}

int SimulateCommand() {
  int exit_code = 0;
  absl::StatusOr<Inputs> inputs = LoadInputs(exit_code);
  if (!inputs.ok()) return exit_code;
  const Hardware& hardware = inputs->hardware;
  const Trace& trace = inputs->trace;
  v1::Budget& budget = inputs->budget;
  std::string policy = absl::GetFlag(FLAGS_policy);
  Plan plan;
  if (!absl::GetFlag(FLAGS_plan).empty()) {
    v1::Plan plan_proto;
    absl::Status read = ReadMessageFile(absl::GetFlag(FLAGS_plan), &plan_proto);
    if (!read.ok()) return ExitFor(read, kFailureExit);
    absl::StatusOr<Plan> parsed = PlanFromProto(trace, plan_proto);
    if (!parsed.ok()) return ExitFor(parsed.status(), kFailureExit);
    plan = *std::move(parsed);
    policy = "plan " + absl::GetFlag(FLAGS_plan);
  } else if (policy == "ideal") {
    plan = IdealPlan(trace);
    budget.set_unlimited(true);
  } else if (policy == "all-keep") {
    plan = Plan::AllKeep(trace);
  } else if (policy == "all-swap") {
    plan = AllSwapPlan(trace);
  } else {
    return ExitFor(absl::InvalidArgumentError(
                       "--policy must be ideal, all-keep or all-swap"),
                   kUsageExit);
  }
  absl::StatusOr<int64_t> budget_bytes = ResolveBudget(trace, budget);
  if (!budget_bytes.ok()) return ExitFor(budget_bytes.status(), kUsageExit);

  SimulationOptions options;
  options.budget_bytes = *budget_bytes;
  options.per_layer_barriers = absl::GetFlag(FLAGS_barriers);
  options.record_timeline = !absl::GetFlag(FLAGS_timeline).empty();
  absl::StatusOr<SimulationResult> result =
      Simulate(trace, hardware, plan, options);
  if (!result.ok()) return ExitFor(result.status(), kFailureExit);

  if (!absl::GetFlag(FLAGS_plan_out).empty()) {
    const std::string path = absl::GetFlag(FLAGS_plan_out);
    absl::Status written =
        WriteMessageFile(path, PlanToProto(plan, DeriveSchedule(trace, plan)),
                         FormatForPath(path));
    if (!written.ok()) return ExitFor(written, kFailureExit);
  }
  if (options.record_timeline) {
    const std::string path = absl::GetFlag(FLAGS_timeline);
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) {
      return ExitFor(absl::PermissionDeniedError("cannot write " + path),
                     kFailureExit);
    }
    const std::string json = ChromeTraceJson(trace, *result);
    const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
    if (std::fclose(f) != 0 || !ok) {
      return ExitFor(absl::DataLossError("short write to " + path),
                     kFailureExit);
    }
  }
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ToJson(MetricsToProto(*result)) << "\n";
  } else {
    PrintMetrics(trace, hardware, policy, *result);
  }
  return 0;
}

int PlanCommand() {
  int exit_code = 0;
  absl::StatusOr<Inputs> inputs = LoadInputs(exit_code);
  if (!inputs.ok()) return exit_code;
  const Trace& trace = inputs->trace;
  absl::StatusOr<int64_t> budget_bytes = ResolveBudget(trace, inputs->budget);
  if (!budget_bytes.ok()) return ExitFor(budget_bytes.status(), kUsageExit);
  v1::PlannerOptions options_proto;
  options_proto.set_guard_fraction(absl::GetFlag(FLAGS_guard));
  const std::string ranking = absl::GetFlag(FLAGS_ranking);
  if (ranking == "cost") {
    options_proto.set_ranking(v1::SWAP_RANKING_RECOMPUTE_COST_PER_BYTE);
  } else if (ranking == "production") {
    options_proto.set_ranking(v1::SWAP_RANKING_PRODUCTION_ORDER);
  } else {
    return ExitFor(
        absl::InvalidArgumentError("--ranking must be cost or production"),
        kUsageExit);
  }
  options_proto.set_link_budget_pass(absl::GetFlag(FLAGS_link_budget_pass));
  options_proto.set_per_layer_barriers(absl::GetFlag(FLAGS_barriers));
  absl::StatusOr<PlannerOptions> options =
      PlannerOptionsFromProto(options_proto);
  if (!options.ok()) return ExitFor(options.status(), kUsageExit);

  absl::StatusOr<Policy> policy = PolicyFromName(absl::GetFlag(FLAGS_planner));
  if (!policy.ok()) return ExitFor(policy.status(), kUsageExit);
  PolicyOptions policy_options;
  policy_options.slackswap = *options;
  policy_options.genetic_search.max_evaluations =
      absl::GetFlag(FLAGS_genetic_evaluations);
  const absl::Time started = absl::Now();
  absl::StatusOr<PlanningResult> result = RunPolicy(
      *policy, trace, inputs->hardware, *budget_bytes, policy_options);
  const absl::Duration planning_time = absl::Now() - started;
  if (!result.ok()) return ExitFor(result.status(), kFailureExit);
  const v1::PlanningReport report = PlanningReportToProto(trace, *result);

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
  if (!result->feasible) {
    std::cout << "outcome      INFEASIBLE: " << result->reason << "\n";
    std::cout << absl::StrFormat("planner      planned in %.2f ms\n",
                                 absl::ToDoubleMilliseconds(planning_time));
    return 0;
  }
  PrintMetrics(trace, inputs->hardware, PolicyName(*policy), result->replay);
  std::cout << absl::StrFormat(
      "lower bound  %s: the plan is within %.2f%% of any plan's iteration "
      "time\n"
      "planner      %d swaps admitted, %d recomputes, %d blocks, %d replays, "
      "%d repairs; "
      "planned in %.2f ms\n",
      Millis(result->lower_bound.iteration_ns), 100 * result->GapToLowerBound(),
      result->stats.swaps_admitted, result->stats.recomputes_marked,
      result->stats.blocks_recomputed, result->stats.repair_iterations,
      result->stats.repairs, absl::ToDoubleMilliseconds(planning_time));
  return 0;
}

int CompareCommand() {
  int exit_code = 0;
  absl::StatusOr<Inputs> inputs = LoadInputs(exit_code);
  if (!inputs.ok()) return exit_code;
  const Trace& trace = inputs->trace;
  std::vector<int64_t> budgets;
  for (absl::string_view text :
       absl::StrSplit(absl::GetFlag(FLAGS_budgets), ',')) {
    absl::StatusOr<v1::Budget> budget = ParseBudget(std::string(text));
    if (!budget.ok()) return ExitFor(budget.status(), kUsageExit);
    absl::StatusOr<int64_t> bytes = ResolveBudget(trace, *budget);
    if (!bytes.ok()) return ExitFor(bytes.status(), kUsageExit);
    budgets.push_back(*bytes);
  }
  std::vector<Policy> policies;
  for (absl::string_view name :
       absl::StrSplit(absl::GetFlag(FLAGS_policies), ',')) {
    absl::StatusOr<Policy> policy = PolicyFromName(name);
    if (!policy.ok()) return ExitFor(policy.status(), kUsageExit);
    policies.push_back(*policy);
  }
  PolicyOptions options;
  options.genetic_search.max_evaluations =
      absl::GetFlag(FLAGS_genetic_evaluations);
  absl::StatusOr<v1::Comparison> comparison =
      Compare(trace, inputs->hardware, budgets, policies, options);
  if (!comparison.ok()) return ExitFor(comparison.status(), kFailureExit);
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ToJson(*comparison) << "\n";
    return 0;
  }
  std::cout << absl::StrFormat("trace %s on %s; ideal %s; all-keep peak %s\n\n",
                               trace.name, inputs->hardware.name,
                               Millis(comparison->ideal_ns()),
                               Gigabytes(comparison->all_keep_peak_bytes()));
  std::cout << absl::StrFormat("%-8s %-27s %9s %12s %10s %10s %9s %9s %9s\n",
                               "budget", "policy", "% ideal", "iteration",
                               "stall", "recompute", "swapped", "recomp.",
                               "vs bound");
  size_t i = 0;
  for (const v1::ComparisonEntry& e : comparison->entries()) {
    const v1::PlanningReport& r = e.report();
    const v1::Metrics& m = r.metrics();
    const std::string policy = PolicyName(policies[i++ % policies.size()]);
    const std::string budget =
        absl::StrFormat("%.0f%%", 100 * e.budget_fraction_of_peak());
    if (r.outcome() != v1::PLAN_OUTCOME_PLANNED) {
      std::cout << absl::StrFormat("%-8s %-27s %9s  %s\n", budget, policy, "-",
                                   "infeasible: " + r.reason().substr(0, 60));
      continue;
    }
    std::cout << absl::StrFormat(
        "%-8s %-27s %8.1f%% %12s %10s %10s %9s %9s %8.2f%%\n", budget, policy,
        100 * m.throughput_ratio(), Millis(m.iteration_ns()),
        Millis(m.prefetch_wait_ns() + m.memory_wait_ns() + m.barrier_wait_ns()),
        Millis(m.recompute_ns()), Gigabytes(m.swapped_bytes()),
        Gigabytes(m.recomputed_bytes()), 100 * r.gap_to_lower_bound());
  }
  return 0;
}

// A row of the calibration table: one workload on one hardware preset.
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

}  // namespace
}  // namespace slackswap

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(slackswap::kUsage);
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() != 2) {
    std::cerr << slackswap::kUsage << "\n";
    return 2;
  }
  const std::string command = positional[1];
  if (command == "generate") return slackswap::Generate();
  if (command == "simulate") return slackswap::SimulateCommand();
  if (command == "presets") return slackswap::Presets();
  if (command == "plan") return slackswap::PlanCommand();
  if (command == "compare") return slackswap::CompareCommand();
  if (command == "report") {
    slackswap::ReportOptions options;
    options.out_dir = absl::GetFlag(FLAGS_out_dir);
    options.quick = absl::GetFlag(FLAGS_quick);
    options.genetic_evaluations = absl::GetFlag(FLAGS_genetic_evaluations);
    if (options.quick) {
      options.genetic_evaluations =
          std::min<int64_t>(options.genetic_evaluations, 600);
      options.swapadvisor_evaluations = 300;
    }
    const absl::Status status = slackswap::WriteReport(options);
    if (!status.ok()) {
      std::cerr << "slackswap: " << status.message() << "\n";
      return 1;
    }
    std::cout << "wrote " << options.out_dir << "/results.md\n";
    return 0;
  }
  if (command == "help") {
    std::cout << slackswap::kUsage << "\n";
    return 0;
  }
  std::cerr << "slackswap: unknown command '" << command.substr(0, 40)
            << "'; run 'slackswap help'\n";
  return 2;
}
