// File: proto_convert.h
//
// The edge between the wire types (slackswap.v1) and the compact internal
// types. Everything that enters from outside is validated here, once; every
// violation names its field path ("trace.tensors[12].use_ops[3]") through
// FieldViolations (field_violations.h). Hostile input (huge counts, cycles,
// negative or overflowing sizes, out-of-range indices) is rejected in time
// linear in the input size, without recursion.
#ifndef SLACKSWAP_SIMULATOR_PROTO_CONVERT_H_
#define SLACKSWAP_SIMULATOR_PROTO_CONVERT_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/plan.h"
#include "simulator/schedule.h"
#include "simulator/trace.h"
#include "simulator/trace_limits.h"
#include "slackswap/v1/hardware.pb.h"
#include "slackswap/v1/plan.pb.h"
#include "slackswap/v1/simulation.pb.h"
#include "slackswap/v1/trace.pb.h"

namespace slackswap {

// Validates `proto` (every rule of docs/event-model.md, "Trace") and builds
// the compact trace with its derived fields. Field paths start with "trace".
absl::StatusOr<Trace> TraceFromProto(const v1::Trace& proto);

// The same for a serialized slackswap.v1.Trace, decoded straight into the
// compact trace without building the message (trace_wire.h): exactly what
// TraceFromProto returns for the parsed message, in about half the time that
// parsing and converting take. std::nullopt when the bytes are not in the
// form protobuf serializers write (unknown fields, unpacked repeated fields,
// groups, invalid UTF-8, malformed bytes): then parse the message and call
// TraceFromProto, which gives the answer (or the parse error) for those.
std::optional<absl::StatusOr<Trace>> TraceFromWire(absl::string_view bytes);

// Validates and converts a hardware descriptor. Field paths start with
// "hardware".
absl::StatusOr<Hardware> HardwareFromProto(const v1::Hardware& proto);
v1::Hardware HardwareToProto(const Hardware& hardware);

// The budget in bytes for `trace`: bytes as given, floor(fraction * peak of
// the all-keep run), or kUnlimitedBytes. Field paths start with "budget".
absl::StatusOr<int64_t> ResolveBudget(const Trace& trace,
                                      const v1::Budget& budget);

// Reads decisions and issue points (the schedule fields are ignored: they are
// derived). Checks the count and the enum values; ValidatePlan checks the
// rest. Field paths start with "plan".
absl::StatusOr<Plan> PlanFromProto(const Trace& trace, const v1::Plan& proto);
// The plan with its derived schedule filled in.
v1::Plan PlanToProto(const Plan& plan, const Schedule& schedule);

v1::Metrics MetricsToProto(const SimulationResult& result);
v1::Timeline TimelineToProto(const SimulationResult& result);

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_PROTO_CONVERT_H_
