// File: trace_convert.h
//
// The trace between its wire form (slackswap.v1.Trace) and the simulator's
// forms. Validation is the simulator's (simulator/trace_validation.h): the
// same rules, in the same order, with the same field paths, for a parsed
// message, for serialized bytes and for a generated TraceSpec.
#ifndef SLACKSWAP_SERVICE_TRACE_CONVERT_H_
#define SLACKSWAP_SERVICE_TRACE_CONVERT_H_

#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/trace.h"
#include "simulator/trace_spec.h"
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

// The wire form of a generated trace, field for field (OpKind::kOther is
// OP_KIND_OTHER; a fixed transfer's index of -1 is left unset).
v1::Trace TraceSpecToProto(const TraceSpec& spec);

// The enums of the wire form, mapped once each way (unknown wire values give
// nullopt).
std::optional<Phase> PhaseFromProto(v1::Phase phase);
std::optional<OpKind> KindFromProto(v1::OpKind kind);
std::optional<Direction> DirectionFromProto(v1::Direction direction);
v1::Phase PhaseToProto(Phase phase);
v1::OpKind KindToProto(OpKind kind);
v1::Direction DirectionToProto(Direction direction);

}  // namespace slackswap

#endif  // SLACKSWAP_SERVICE_TRACE_CONVERT_H_
