#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/file.h"
#include "client/chrome_trace.h"
#include "client/cli_commands.h"
#include "client/cli_flags.h"
#include "client/cli_inputs.h"
#include "client/cli_output.h"
#include "client/load_generator.h"
#include "planner/basic_plans.h"
#include "service/message_io.h"
#include "service/trace_convert.h"
#include "service/wire_convert.h"
#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/schedule.h"
#include "simulator/workload.h"

namespace slackswap {

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
      backend.Call<Method::kGenerateTrace>(*request);
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
  if (response->trace().fixed_transfers_size() > 0) {
    int64_t d2h = 0, h2d = 0;
    for (const v1::FixedTransfer& x : response->trace().fixed_transfers())
      (x.direction() == v1::DIRECTION_D2H ? d2h : h2d) += x.size_bytes();
    std::cout << absl::StrFormat(
        "fixed transfers    %d: %s D2H, %s H2D per iteration\n",
        response->trace().fixed_transfers_size(), Gigabytes(d2h),
        Gigabytes(h2d));
  }
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
  absl::StatusOr<v1::Physics> physics = PhysicsFromFlags();
  if (!physics.ok()) return ExitFor(physics.status(), kUsageExit);
  *request.mutable_physics() = *physics;
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
  absl::StatusOr<v1::SimulateResponse> response =
      backend.Call<Method::kSimulate>(request);
  if (!response.ok()) return ExitFor(response.status(), kFailureExit);
  if (!absl::GetFlag(FLAGS_plan_out).empty()) {
    const std::string path = absl::GetFlag(FLAGS_plan_out);
    absl::Status written =
        WriteMessageFile(path, response->plan(), FormatForPath(path));
    if (!written.ok()) return ExitFor(written, kFailureExit);
  }
  if (request.include_timeline()) {
    std::string name = absl::GetFlag(FLAGS_timeline_name);
    if (name.empty()) name = absl::StrCat(policy, ": ", inputs->trace.name);
    absl::Status written = WriteFileBytes(
        absl::GetFlag(FLAGS_timeline),
        ChromeTraceJson(inputs->trace_proto, response->timeline(),
                        response->metrics(), name));
    if (!written.ok()) return ExitFor(written, kFailureExit);
  }
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ToJson(response->metrics()) << "\n";
  } else {
    PrintMetrics(*inputs, policy, response->metrics());
  }
  return 0;
}

}  // namespace slackswap
