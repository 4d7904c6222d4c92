// File: cli_inputs.h
//
// What the slackswap command's flags ask for: the backend (in-process or a
// server), the hardware, trace and budget, and the requests built from them.
#ifndef SLACKSWAP_CLIENT_CLI_INPUTS_H_
#define SLACKSWAP_CLIENT_CLI_INPUTS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "client/backend.h"
#include "simulator/hardware.h"
#include "simulator/trace.h"
#include "slackswap/v1/service.pb.h"

namespace slackswap {

// A --hardware value that names a file rather than a preset.
bool LooksLikePath(const std::string& value);

// --server and its TLS and deadline flags.
ConnectionOptions ConnectionFromFlags();
// In-process, or against --server.
absl::StatusOr<std::unique_ptr<Backend>> MakeBackend();

// The generator request the flags describe (INVALID_ARGUMENT naming the
// flag; NOT_FOUND for an unknown preset).
absl::StatusOr<v1::GenerateTraceRequest> GenerateRequestFromFlags();

// A --budget value: a fraction ("0.5"), a percentage ("50%"), bytes
// ("20GB", "20GiB", "123") or "unlimited". INVALID_ARGUMENT otherwise.
absl::StatusOr<v1::Budget> ParseBudget(const std::string& text);

// What simulate, plan, compare, frontier and bench-server all start from.
struct Inputs {
  v1::Trace trace_proto;
  v1::Hardware hardware_proto;
  Trace trace;  // validated locally too: for budgets and printing
  Hardware hardware;
  v1::Budget budget;
};

// Hardware, trace and budget from the flags; on an error, prints it and sets
// `exit_code` (cli_output.h).
absl::StatusOr<Inputs> LoadInputs(Backend& backend, int& exit_code);

// The planner options and the Plan request the flags describe.
absl::StatusOr<v1::PlannerOptions> PlannerOptionsFromFlags();
// --hardware (a preset or a file) with --gpus_per_link and --uplink_gbps,
// validated; on an error `exit_code` is set (usage or failure).
absl::StatusOr<v1::Hardware> HardwareFromFlags(int& exit_code);
// --allocator, --budget_reserved, --hbm_contention and --rank_skew_ns (the
// uplink flags go into the hardware).
absl::StatusOr<v1::Physics> PhysicsFromFlags();
// Both into `request` (a Plan, Frontier or PlanNode request).
template <typename Request>
absl::Status SetOptionsAndPhysics(Request& request) {
  SLACKSWAP_ASSIGN_OR_RETURN(*request.mutable_options(),
                             PlannerOptionsFromFlags());
  SLACKSWAP_ASSIGN_OR_RETURN(*request.mutable_physics(), PhysicsFromFlags());
  return absl::OkStatus();
}
absl::StatusOr<v1::PlanRequest> PlanRequestFromFlags(const Inputs& in);

}  // namespace slackswap

#endif  // SLACKSWAP_CLIENT_CLI_INPUTS_H_
