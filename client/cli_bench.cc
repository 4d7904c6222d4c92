#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "client/cli_commands.h"
#include "client/cli_flags.h"
#include "client/cli_inputs.h"
#include "client/cli_output.h"
#include "client/load_generator.h"

namespace slackswap {

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

}  // namespace slackswap
