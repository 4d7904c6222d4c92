// slackswap-server: the planning service.
//
//   slackswap-server --listen 0.0.0.0:50051 --metrics 0.0.0.0:9464
//
// On SIGTERM or SIGINT: health goes NOT_SERVING, no new calls are accepted,
// calls in flight get --grace to finish, and the process exits 0.
#include <algorithm>
#include <csignal>
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/build_info.h"
#include "base/malloc_tuning.h"
#include "google/protobuf/stubs/logging.h"
#include "server/server.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:50051",
          "gRPC listen address (port 0: pick one)");
ABSL_FLAG(std::string, metrics, "0.0.0.0:9464",
          "Prometheus /metrics address (port 0: pick one; empty: none)");
ABSL_FLAG(int, max_message_bytes, 32 << 20,
          "largest request or response, bytes (the default fits traces far "
          "beyond a 50x GPT-2 XL trace)");
ABSL_FLAG(int64_t, max_call_memory_bytes, 256 << 20,
          "memory one call may take while it plans, estimated from its trace "
          "before planning (0: no limit); see docs/service.md, Limits");
ABSL_FLAG(int64_t, max_call_work, int64_t{1} << 34,
          "work one call may ask for, in trace elements x replays (budgets x "
          "policies x evaluations; 0: no limit)");
ABSL_FLAG(absl::Duration, max_call_duration, absl::Minutes(10),
          "longest a call may run, whatever its client's deadline (0: no "
          "limit)");
ABSL_FLAG(int, max_concurrent_requests, 8,
          "calls handled at once; more get RESOURCE_EXHAUSTED at once");
ABSL_FLAG(int, planning_threads, 0,
          "calls planned at once (0: the CPUs this process may use, after "
          "affinity and a container's CPU limit); admitted calls beyond it "
          "wait in arrival order");
ABSL_FLAG(std::string, tls_cert, "",
          "server certificate chain (PEM); TLS with --tls_key");
ABSL_FLAG(std::string, tls_key, "", "server private key (PEM)");
ABSL_FLAG(std::string, tls_client_ca, "",
          "client CA (PEM): require client certificates");
ABSL_FLAG(absl::Duration, min_client_ping_interval, absl::Seconds(10),
          "accept keepalive pings this often from a client, with or without "
          "calls in flight (more often: the connection is closed)");
ABSL_FLAG(absl::Duration, tls_reload_interval, absl::Seconds(60),
          "how often the TLS files are checked for a renewed certificate "
          "(served to new connections without a restart)");
ABSL_FLAG(bool, compress_responses, true,
          "gzip responses of 16 KiB or more for clients that accept it "
          "(gRPC's grpc-accept-encoding)");
ABSL_FLAG(std::string, call_log, "json",
          "one line per call on stderr: json (method, code, duration, queue "
          "wait, sizes, request id, traceparent, peer) or none");
ABSL_FLAG(absl::Duration, grace, absl::Seconds(20),
          "on SIGTERM, how long calls in flight may take to finish");
ABSL_FLAG(absl::Duration, max_connection_age, absl::ZeroDuration(),
          "close connections after this long so clients rebalance (0: never)");

namespace {

// Protobuf logs an error for every string field that is not UTF-8 when it
// parses a message. The caller already gets INVALID_ARGUMENT for it, so one
// client could otherwise fill the log with a line per call. Everything else
// protobuf logs is kept.
void LogProtobuf(google::protobuf::LogLevel level, const char* filename,
                 int line, const std::string& message) {
  if (absl::StrContains(message, "invalid UTF-8")) return;
  static const char* const kLevels[] = {"INFO", "WARNING", "ERROR", "FATAL"};
  std::cerr << "[libprotobuf "
            << kLevels[std::clamp(static_cast<int>(level), 0, 3)] << " "
            << filename << ":" << line << "] " << message << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "the SlackSwap planning service (docs/service.md)");
  // --help lists this binary's flags (Abseil's default lists those of files
  // named like the binary, which here is none); --version names the build.
  slackswap::ConfigureFlagsUsage("slackswap-server", "server/");
  slackswap::ParseFlags(argc, argv);
  slackswap::KeepFreedMemoryForReuse();
  google::protobuf::SetLogHandler(LogProtobuf);

  // Signals are taken synchronously by this thread; every thread started
  // from here on inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  slackswap::ServerOptions options;
  options.listen_address = absl::GetFlag(FLAGS_listen);
  options.metrics_address = absl::GetFlag(FLAGS_metrics);
  options.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  options.call_limits.max_memory_bytes =
      absl::GetFlag(FLAGS_max_call_memory_bytes);
  options.call_limits.max_work = absl::GetFlag(FLAGS_max_call_work);
  options.max_call_duration = absl::GetFlag(FLAGS_max_call_duration);
  options.max_concurrent_calls = absl::GetFlag(FLAGS_max_concurrent_requests);
  options.planning_threads = absl::GetFlag(FLAGS_planning_threads);
  options.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  options.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  options.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  options.max_connection_age = absl::GetFlag(FLAGS_max_connection_age);
  options.min_client_ping_interval =
      absl::GetFlag(FLAGS_min_client_ping_interval);
  options.compress_responses = absl::GetFlag(FLAGS_compress_responses);
  options.tls_reload_interval = absl::GetFlag(FLAGS_tls_reload_interval);
  options.version = slackswap::BuildVersion();
  options.revision = slackswap::BuildRevision();
  const std::string call_log = absl::GetFlag(FLAGS_call_log);
  if (call_log != "json" && call_log != "none") {
    std::cerr << "slackswap-server: --call_log must be json or none, not \""
              << call_log << "\"" << std::endl;
    return 2;
  }
  options.call_log = call_log == "json";

  auto server = slackswap::PlanningServer::Start(options);
  if (!server.ok()) {
    std::cerr << "slackswap-server: " << server.status().message() << std::endl;
    return 1;
  }
  // Tests and scripts read these two lines to find the ports.
  std::cout << "listening on port " << (*server)->port() << std::endl;
  if ((*server)->metrics_port() > 0) {
    std::cout << "metrics on port " << (*server)->metrics_port() << std::endl;
  }
  std::cout << "planning threads " << (*server)->planning_threads()
            << std::endl;

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  const absl::Duration grace = absl::GetFlag(FLAGS_grace);
  std::cout << "signal " << signal_number << ": draining for up to " << grace
            << std::endl;
  const absl::Time start = absl::Now();
  (*server)->Drain(grace);
  std::cout << "drained in " << absl::Now() - start << "; exiting" << std::endl;
  return 0;
}
