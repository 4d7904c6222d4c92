#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/cli_commands.h"
#include "client/cli_flags.h"
#include "client/cli_inputs.h"
#include "client/cli_output.h"
#include "client/load_generator.h"
#include "planner/policies.h"
#include "service/message_io.h"
#include "service/trace_convert.h"
#include "service/wire_convert.h"
#include "simulator/event_model.h"
#include "simulator/hardware.h"

namespace slackswap {

namespace {

// A call the service refused as invalid is a usage error; others failures.
int ExitForCall(const absl::Status& status) {
  return ExitFor(status, status.code() == absl::StatusCode::kInvalidArgument
                             ? kUsageExit
                             : kFailureExit);
}

}  // namespace

int PlanCommand(Backend& backend) {
  int exit_code = 0;
  absl::StatusOr<Inputs> inputs = LoadInputs(backend, exit_code);
  if (!inputs.ok()) return exit_code;
  absl::StatusOr<v1::PlanRequest> request = PlanRequestFromFlags(*inputs);
  if (!request.ok()) return ExitFor(request.status(), kUsageExit);
  absl::StatusOr<v1::PlanResponse> response =
      backend.Call<Method::kPlan>(*request);
  if (!response.ok()) return ExitFor(response.status(), kFailureExit);
  const v1::PlanningReport& report = response->report();
  if (!absl::GetFlag(FLAGS_plan_out).empty()) {
    const std::string path = absl::GetFlag(FLAGS_plan_out);
    absl::Status written =
        WriteMessageFile(path, report.plan(), FormatForPath(path));
    if (!written.ok()) return ExitFor(written, kFailureExit);
  }
  if (!absl::GetFlag(FLAGS_report_out).empty()) {
    const std::string path = absl::GetFlag(FLAGS_report_out);
    absl::Status written = WriteMessageFile(path, report, FormatForPath(path));
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
    std::cout << "outcome      " << OutcomeWord(report.outcome()) << ": "
              << report.reason() << "\n";
    std::cout << absl::StrFormat("planner      planned in %.2f ms\n",
                                 planning_ms);
    return 0;
  }
  PrintMetrics(*inputs, absl::GetFlag(FLAGS_planner), report.metrics());
  if (report.planned_budget_bytes() != 0 &&
      report.planned_budget_bytes() != report.metrics().budget_bytes()) {
    std::cout << absl::StrFormat(
        "allocator    planned for %s resident, for its reserved bytes to fit\n",
        Gigabytes(report.planned_budget_bytes()));
  }
  const v1::PlannerStatistics& st = report.statistics();
  const std::string search =
      st.search_replays() == 0
          ? ""
          : absl::StrFormat(
                "; searched %d replays (%s%s)", st.search_replays(),
                st.search_improved() ? "found a faster plan" : "nothing faster",
                st.proven_optimal() ? "; the exact optimum" : "");
  std::cout << absl::StrFormat(
      "lower bound  %s: the plan is within %.2f%% of any plan's iteration "
      "time\n"
      "planner      %d swaps admitted, %d recomputes, %d blocks, %d repair "
      "rounds, %d repairs%s; "
      "planned in %.2f ms\n",
      Millis(report.lower_bound_ns()), 100 * report.gap_to_lower_bound(),
      st.swaps_admitted(), st.recomputes_marked(), st.blocks_recomputed(),
      st.repair_iterations(), st.repairs(), search, planning_ms);
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
  absl::StatusOr<v1::Physics> physics = PhysicsFromFlags();
  if (!physics.ok()) return ExitFor(physics.status(), kUsageExit);
  *request.mutable_physics() = *physics;
  // The allocator's peak gets a column of its own when it is modelled.
  const bool reserved = physics->allocator() > v1::ALLOCATOR_MODEL_NONE;
  absl::StatusOr<v1::CompareResponse> response =
      backend.Call<Method::kCompare>(request);
  if (!response.ok()) return ExitFor(response.status(), kFailureExit);
  const v1::Comparison& comparison = response->comparison();
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ToJson(comparison) << "\n";
    return 0;
  }
  std::cout << WorkloadLine(*inputs, comparison.ideal_ns(),
                            comparison.all_keep_peak_bytes())
            << "\n";
  std::cout << absl::StrFormat(
      "%-9s %-27s %9s %12s %10s %10s %9s %9s %9s%s\n", "budget", "policy",
      "% ideal", "iteration", "stall", "recompute", "swapped", "recomp.",
      "vs bound", reserved ? absl::StrFormat(" %9s", "reserved") : "");
  for (const v1::ComparisonEntry& e : comparison.entries()) {
    const v1::PlanningReport& r = e.report();
    const v1::Metrics& m = r.metrics();
    absl::StatusOr<Policy> policy = PolicyFromProto(e.policy(), "policy");
    const std::string name = policy.ok() ? PolicyName(*policy) : "?";
    const std::string budget =
        e.budget_unlimited()
            ? "unlimited"
            : absl::StrFormat("%.0f%%", 100 * e.budget_fraction_of_peak());
    if (r.outcome() != v1::PLAN_OUTCOME_PLANNED) {
      std::cout << absl::StrFormat(
          "%-9s %-27s %9s  %s\n", budget, name, "-",
          absl::StrCat(OutcomeWord(r.outcome(), true), ": ",
                       r.reason().substr(0, 60)));
      continue;
    }
    std::cout << absl::StrFormat(
        "%-9s %-27s %8.1f%% %12s %10s %10s %9s %9s %8.2f%%%s\n", budget, name,
        100 * m.throughput_ratio(), Millis(m.iteration_ns()),
        Millis(m.prefetch_wait_ns() + m.memory_wait_ns() + m.barrier_wait_ns() +
               m.fixed_transfer_wait_ns()),
        Millis(m.recompute_ns()), Gigabytes(m.swapped_bytes()),
        Gigabytes(m.recomputed_bytes()), 100 * r.gap_to_lower_bound(),
        reserved ? absl::StrFormat(" %9s", Gigabytes(m.peak_reserved_bytes()))
                 : "");
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
  absl::Status flags = SetOptionsAndPhysics(request);
  if (!flags.ok()) return ExitFor(flags, kUsageExit);
  absl::StatusOr<v1::FrontierResponse> response =
      backend.Call<Method::kFrontier>(request);
  if (!response.ok()) return ExitForCall(response.status());
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ToJson(*response) << "\n";
    return 0;
  }
  std::cout << WorkloadLine(*inputs, response->ideal_ns(),
                            response->all_keep_peak_bytes());
  std::cout << absl::StrFormat(
      "no plan fits below %s (proven); the curve starts where SlackSwap "
      "first plans\n\n",
      Gigabytes(response->proven_floor_bytes()));
  std::cout << absl::StrFormat("%-8s %12s %9s %12s %10s %10s\n", "budget",
                               "bytes", "% ideal", "iteration", "swapped",
                               "recomp.");
  auto row = [](const v1::FrontierPoint& p) {
    if (p.outcome() != v1::PLAN_OUTCOME_PLANNED) {
      return absl::StrFormat(
          "%6.1f%%  %12s %9s\n", 100 * p.budget_fraction_of_peak(),
          Gigabytes(p.budget_bytes()), OutcomeWord(p.outcome(), true));
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

int NodeCommand(Backend& backend) {
  v1::PlanNodeRequest request;
  // The node's hardware, as for the other commands.
  int exit_code = 0;
  absl::StatusOr<v1::Hardware> hardware = HardwareFromFlags(exit_code);
  if (!hardware.ok()) return exit_code;
  *request.mutable_hardware() = *hardware;
  const std::string preset = absl::GetFlag(FLAGS_hardware);
  for (absl::string_view text :
       absl::StrSplit(absl::GetFlag(FLAGS_jobs), ',')) {
    std::vector<std::string> parts = absl::StrSplit(text, ':');
    v1::NodeJob* job = request.add_jobs();
    job->set_name(parts[0]);
    int32_t gpus = 1;
    if (parts.size() > 1 && !absl::SimpleAtoi(parts[1], &gpus)) {
      return ExitFor(absl::InvalidArgumentError(absl::StrCat(
                         "--jobs: '", text, "': GPUS must be a number")),
                     kUsageExit);
    }
    job->set_gpus(gpus);
    absl::StatusOr<v1::Budget> budget =
        ParseBudget(parts.size() > 2 ? parts[2] : "0.5");
    if (!budget.ok()) return ExitFor(budget.status(), kUsageExit);
    *job->mutable_budget() = *budget;
    if (parts.size() > 3) {
      return ExitFor(absl::InvalidArgumentError(absl::StrCat(
                         "--jobs: '", text,
                         "' is not PRESET_OR_TRACE_FILE[:GPUS[:BUDGET]]")),
                     kUsageExit);
    }
    if (LooksLikePath(parts[0])) {
      absl::Status read = ReadMessageFile(parts[0], job->mutable_trace());
      if (!read.ok()) return ExitFor(read, kFailureExit);
      continue;
    }
    v1::GenerateTraceRequest generate;
    generate.set_workload_preset(parts[0]);
    generate.set_hardware_preset(LooksLikePath(preset) ? "a100" : preset);
    absl::StatusOr<v1::GenerateTraceResponse> generated =
        backend.Call<Method::kGenerateTrace>(generate);
    if (!generated.ok()) return ExitFor(generated.status(), kUsageExit);
    *job->mutable_trace() = std::move(*generated->mutable_trace());
  }
  absl::Status flags = SetOptionsAndPhysics(request);
  if (!flags.ok()) return ExitFor(flags, kUsageExit);
  absl::StatusOr<v1::PlanNodeResponse> response =
      backend.Call<Method::kPlanNode>(request);
  if (!response.ok()) return ExitForCall(response.status());
  if (absl::GetFlag(FLAGS_json)) {
    v1::PlanNodeResponse printed = *response;
    printed.clear_planning_time_ns();
    for (v1::NodeJobReport& job : *printed.mutable_jobs())
      job.mutable_report()->clear_plan();
    std::cout << ToJson(printed) << "\n";
    return 0;
  }
  const v1::Hardware& hw = request.hardware();
  std::cout << absl::StrFormat(
      "node         %s: links D2H %s/s, H2D %s/s; uplink %s\n", hw.name(),
      Gigabytes(hw.d2h_bytes_per_second()),
      Gigabytes(hw.h2d_bytes_per_second()),
      hw.uplink_d2h_bytes_per_second() > 0
          ? absl::StrCat(Gigabytes(hw.uplink_d2h_bytes_per_second()),
                         "/s per direction")
          : std::string("uncapped"));
  std::cout << absl::StrFormat("%-16s %5s %8s %8s %12s %12s %9s %9s\n", "job",
                               "GPUs", "budget", "uplink", "alone", "beside",
                               "slowdown", "causes");
  for (int i = 0; i < response->jobs_size(); ++i) {
    const v1::NodeJobReport& j = response->jobs(i);
    const v1::NodeJob& asked = request.jobs(i);
    if (j.outcome() != v1::PLAN_OUTCOME_PLANNED) {
      std::cout << absl::StrFormat("%-16s %5d  %s: %s\n", j.name(),
                                   std::max(asked.gpus(), 1),
                                   OutcomeWord(j.outcome(), true), j.reason());
      continue;
    }
    std::cout << absl::StrFormat(
        "%-16s %5d %8s %7.0f%% %12s %12s %8.3fx %+8.1f%%\n",
        j.name().substr(0, 16), std::max(asked.gpus(), 1),
        Gigabytes(j.report().metrics().budget_bytes()), 100 * j.uplink_share(),
        Millis(j.alone_step_ns()), Millis(j.shared_step_ns()), j.slowdown(),
        100 * j.slowdown_caused());
  }
  std::cout << absl::StrFormat(
      "planned %d share split(s) in %.1f ms\n", response->candidates(),
      static_cast<double>(response->planning_time_ns()) / 1e6);
  return 0;
}

}  // namespace slackswap
