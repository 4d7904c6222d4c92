#include "client/cli_inputs.h"

#include <cmath>
#include <cstring>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "client/cli_flags.h"
#include "client/cli_output.h"
#include "planner/policies.h"
#include "service/message_io.h"
#include "service/service_core.h"
#include "service/trace_convert.h"
#include "service/wire_convert.h"
#include "simulator/event_model.h"
#include "simulator/workload.h"

namespace slackswap {

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
  if (!precision.empty()) {
    const std::optional<Precision> p = PrecisionFromName(precision);
    if (!p.has_value()) {
      return absl::InvalidArgumentError(
          "--precision must be bf16, fp16 or fp32");
    }
    r.set_precision(PrecisionToProto(*p));
  }
  const std::string attention = absl::GetFlag(FLAGS_attention);
  if (attention == "flash") {
    r.set_attention(v1::ATTENTION_FLASH);
  } else if (attention == "unfused") {
    r.set_attention(v1::ATTENTION_UNFUSED);
  } else if (!attention.empty()) {
    return absl::InvalidArgumentError("--attention must be flash or unfused");
  }
  const std::optional<Offload> offload =
      OffloadFromName(absl::GetFlag(FLAGS_offload));
  if (!offload.has_value()) {
    return absl::InvalidArgumentError(
        "--offload must be none, zero, zero-dpu or fsdp-cpu");
  }
  if (*offload != Offload::kNone) r.set_offload(OffloadToProto(*offload));
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

absl::StatusOr<v1::Hardware> HardwareFromFlags(int& exit_code) {
  auto fail = [&](const absl::Status& status, int code) {
    exit_code = ExitFor(status, code);
    return status;
  };
  v1::Hardware proto;
  const std::string hardware = absl::GetFlag(FLAGS_hardware);
  if (LooksLikePath(hardware)) {
    absl::Status read = ReadMessageFile(hardware, &proto);
    if (!read.ok()) return fail(read, kFailureExit);
  } else {
    absl::StatusOr<Hardware> preset = HardwarePreset(hardware);
    if (!preset.ok()) return fail(preset.status(), kUsageExit);
    proto = HardwareToProto(*preset);
  }
  // The node around the GPU, when the flags give it.
  if (absl::GetFlag(FLAGS_gpus_per_link) != 0)
    proto.set_gpus_per_uplink(absl::GetFlag(FLAGS_gpus_per_link));
  const double uplink_gbps = absl::GetFlag(FLAGS_uplink_gbps);
  // GB/s as bytes per second must fit in int64: at most about 9.2e9 GB/s.
  constexpr double kMaxUplinkGbps = 9.2e9;
  if (!std::isfinite(uplink_gbps) || uplink_gbps < 0 ||
      uplink_gbps > kMaxUplinkGbps) {
    return fail(absl::InvalidArgumentError(absl::StrCat(
                    "--uplink_gbps: ", uplink_gbps,
                    " is not a rate: give GB/s per direction in [0, 9.2e9] "
                    "(0: the hardware's uplink)")),
                kUsageExit);
  }
  if (uplink_gbps != 0) {
    const auto bytes = static_cast<int64_t>(uplink_gbps * 1e9);
    proto.set_uplink_d2h_bytes_per_second(bytes);
    proto.set_uplink_h2d_bytes_per_second(bytes);
  }
  absl::Status valid = HardwareFromProto(proto).status();
  if (!valid.ok()) return fail(valid, kUsageExit);
  return proto;
}

absl::StatusOr<Inputs> LoadInputs(Backend& backend, int& exit_code) {
  Inputs in;
  auto fail = [&](const absl::Status& status, int code) {
    exit_code = ExitFor(status, code);
    return status;
  };
  SLACKSWAP_ASSIGN_OR_RETURN(in.hardware_proto, HardwareFromFlags(exit_code));
  in.hardware = *HardwareFromProto(in.hardware_proto);
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
    if (LooksLikePath(absl::GetFlag(FLAGS_hardware))) {
      return fail(
          absl::InvalidArgumentError("a generated trace needs a hardware "
                                     "preset; give --trace with a hardware "
                                     "file"),
          kUsageExit);
    }
    absl::StatusOr<v1::GenerateTraceResponse> generated =
        backend.Call<Method::kGenerateTrace>(*request);
    if (!generated.ok()) return fail(generated.status(), kFailureExit);
    in.trace_proto = std::move(*generated->mutable_trace());
  }
  absl::StatusOr<Trace> trace = TraceFromProto(in.trace_proto);
  if (!trace.ok()) return fail(trace.status(), kFailureExit);
  in.trace = *std::move(trace);
  return in;
}

absl::StatusOr<v1::PlannerOptions> PlannerOptionsFromFlags() {
  v1::PlannerOptions options;
  options.set_guard_fraction(absl::GetFlag(FLAGS_guard));
  if (absl::GetFlag(FLAGS_lp_bound)) options.set_linear_program_bound(true);
  options.set_gap_target(absl::GetFlag(FLAGS_gap_target));
  options.set_search_time_ms(absl::GetFlag(FLAGS_search_ms));
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

absl::StatusOr<v1::Physics> PhysicsFromFlags() {
  v1::Physics physics;
  const std::string allocator = absl::GetFlag(FLAGS_allocator);
  if (allocator == "none") {
    physics.set_allocator(v1::ALLOCATOR_MODEL_NONE);
  } else if (allocator == "caching") {
    physics.set_allocator(v1::ALLOCATOR_MODEL_CACHING);
  } else if (allocator == "expandable") {
    physics.set_allocator(v1::ALLOCATOR_MODEL_EXPANDABLE);
  } else {
    return absl::InvalidArgumentError(
        "--allocator must be none, caching or expandable");
  }
  physics.set_budget_reserved(absl::GetFlag(FLAGS_budget_reserved));
  physics.set_hbm_contention(absl::GetFlag(FLAGS_hbm_contention));
  physics.set_rank_skew_ns(absl::GetFlag(FLAGS_rank_skew_ns));
  if (physics.budget_reserved() && allocator == "none") {
    return absl::InvalidArgumentError(
        "--budget_reserved needs --allocator caching or expandable");
  }
  return physics;
}

absl::StatusOr<v1::PlanRequest> PlanRequestFromFlags(const Inputs& in) {
  v1::PlanRequest request;
  *request.mutable_trace() = in.trace_proto;
  *request.mutable_hardware() = in.hardware_proto;
  *request.mutable_budget() = in.budget;
  SLACKSWAP_RETURN_IF_ERROR(SetOptionsAndPhysics(request));
  SLACKSWAP_ASSIGN_OR_RETURN(Policy policy,
                             PolicyFromName(absl::GetFlag(FLAGS_planner)));
  request.set_policy(PolicyToProto(policy));
  SLACKSWAP_RETURN_IF_ERROR(ResolveBudget(in.trace, in.budget).status());
  return request;
}

}  // namespace slackswap
