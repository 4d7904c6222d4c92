#include "service/trace_wire.h"

#include <cstring>

#include "base/utf8.h"
#include "service/wire_reader.h"
#include "simulator/trace_limits.h"

namespace slackswap {
namespace {

// The decoder takes only the canonical form (trace_wire.h).
class CanonicalReader : public WireReader {
 public:
  explicit CanonicalReader(absl::string_view bytes)
      : WireReader(bytes, WireForm::kCanonical) {}
  // Any bytes: conversion rejects a name that is not UTF-8 with its field
  // path (protobuf would reject the whole message, and log it).
  bool Name(absl::string_view& name) { return Bytes(name); }
};

// int32 and enum fields keep the low 32 bits of the varint, as protobuf does.
int32_t Low32(uint64_t value) {
  return static_cast<int32_t>(static_cast<uint32_t>(value));
}

// The fields the decoder reads, by their generated numbers.
using Op = v1::Operator;
using Ts = v1::Tensor;
using Tr = v1::Trace;

// Operator and Tensor have fields 1 to 8 that the planner reads (or that
// are integers kept aside); later fields are skipped, as protobuf keeps
// unknown ones aside. The varint fields are read into a table by field number
// and typed at the end: no branch on the field per value, and a field written
// twice keeps its last value, as in protobuf.
constexpr uint32_t kLastField = 8;
static_assert(Op::kMemoryTrafficBytesFieldNumber == kLastField &&
                  Ts::kRecomputeForbiddenFieldNumber == kLastField,
              "the tables cover every integer field of Operator and Tensor");
bool DecodeOperator(absl::string_view bytes, WireOperator& op) {
  CanonicalReader in(bytes);
  uint64_t values[kLastField + 1] = {};
  uint32_t field = 0;
  uint32_t wire_type = 0;
  while (!in.done()) {
    if (!in.Tag(field, wire_type)) return false;
    if (field == Op::kNameFieldNumber) {
      if (wire_type != kLengthDelimited || !in.Name(op.name_)) return false;
    } else if (field > kLastField) {
      if (!in.Skip(field, wire_type)) return false;  // a newer or runtime-only
    } else if (wire_type != kVarint || !in.Varint(values[field])) {
      return false;
    }
  }
  op.phase_ = Low32(values[Op::kPhaseFieldNumber]);
  op.kind_ = Low32(values[Op::kKindFieldNumber]);
  op.duration_ns_ = static_cast<int64_t>(values[Op::kDurationNsFieldNumber]);
  op.block_index_ = Low32(values[Op::kBlockIndexFieldNumber]);
  op.workspace_bytes_ =
      static_cast<int64_t>(values[Op::kWorkspaceBytesFieldNumber]);
  op.flops_ = static_cast<int64_t>(values[Op::kFlopsFieldNumber]);
  op.memory_traffic_bytes_ =
      static_cast<int64_t>(values[Op::kMemoryTrafficBytesFieldNumber]);
  return true;
}

// Appends a packed run of int32 values to `ints`.
bool DecodePacked(absl::string_view bytes, std::vector<int32_t>& ints,
                  int& begin, int& count) {
  begin = static_cast<int>(ints.size());
  CanonicalReader in(bytes);
  uint64_t value = 0;
  while (!in.done()) {
    if (!in.Varint(value)) return false;
    ints.push_back(Low32(value));
  }
  count = static_cast<int>(ints.size()) - begin;
  return true;
}

bool DecodeTensor(absl::string_view bytes, std::vector<int32_t>& ints,
                  WireTensor& t) {
  CanonicalReader in(bytes);
  uint64_t values[kLastField + 1] = {};
  uint32_t field = 0;
  uint32_t wire_type = 0;
  bool seen_uses = false;
  bool seen_inputs = false;
  absl::string_view payload;
  while (!in.done()) {
    if (!in.Tag(field, wire_type)) return false;
    if (field == Ts::kNameFieldNumber) {
      if (wire_type != kLengthDelimited || !in.Name(t.name_)) return false;
    } else if (field == Ts::kUseOpsFieldNumber ||
               field == Ts::kRecomputeInputsFieldNumber) {
      // Packed, and once: protobuf would append a second run.
      const bool uses = field == Ts::kUseOpsFieldNumber;
      bool& seen = uses ? seen_uses : seen_inputs;
      if (wire_type != kLengthDelimited || seen || !in.Bytes(payload))
        return false;
      seen = true;
      const bool decoded =
          uses ? DecodePacked(payload, ints, t.use_ops_begin_, t.use_ops_count_)
               : DecodePacked(payload, ints, t.recompute_inputs_begin_,
                              t.recompute_inputs_count_);
      if (!decoded) return false;
    } else if (field == Ts::kDtypeFieldNumber) {
      // dtype, for runtimes: skipped, but it must be UTF-8 as protobuf
      // requires of a string (else protobuf decides).
      if (wire_type != kLengthDelimited || !in.Bytes(payload) ||
          !IsWellFormedUtf8(payload))
        return false;
    } else if (field > kLastField) {
      // producer_output (for runtimes) and newer fields.
      if (!in.Skip(field, wire_type)) return false;
    } else if (wire_type != kVarint || !in.Varint(values[field])) {
      return false;
    }
  }
  t.size_bytes_ = static_cast<int64_t>(values[Ts::kSizeBytesFieldNumber]);
  t.producer_op_ = Low32(values[Ts::kProducerOpFieldNumber]);
  t.recompute_duration_ns_ =
      static_cast<int64_t>(values[Ts::kRecomputeDurationNsFieldNumber]);
  t.swap_forbidden_ = values[Ts::kSwapForbiddenFieldNumber] != 0;
  t.recompute_forbidden_ = values[Ts::kRecomputeForbiddenFieldNumber] != 0;
  return true;
}

// FixedTransfer's fields 1 to 7, its indices with their presence (a field
// on the wire, zero included: proto3's optional); later fields are skipped.
using Fx = v1::FixedTransfer;
constexpr uint32_t kLastFixedTransferField = 7;
static_assert(Fx::kReleaseOpFieldNumber == kLastFixedTransferField,
              "the table covers every integer field of FixedTransfer");
bool DecodeFixedTransfer(absl::string_view bytes, WireFixedTransfer& x) {
  CanonicalReader in(bytes);
  uint64_t values[kLastFixedTransferField + 1] = {};
  bool seen[kLastFixedTransferField + 1] = {};
  uint32_t field = 0;
  uint32_t wire_type = 0;
  while (!in.done()) {
    if (!in.Tag(field, wire_type)) return false;
    if (field == Fx::kNameFieldNumber) {
      if (wire_type != kLengthDelimited || !in.Name(x.name_)) return false;
    } else if (field > kLastFixedTransferField) {
      if (!in.Skip(field, wire_type)) return false;
    } else if (wire_type != kVarint || !in.Varint(values[field])) {
      return false;
    } else {
      seen[field] = true;
    }
  }
  x.direction_ = Low32(values[Fx::kDirectionFieldNumber]);
  x.size_bytes_ = static_cast<int64_t>(values[Fx::kSizeBytesFieldNumber]);
  x.after_op_ = Low32(values[Fx::kAfterOpFieldNumber]);
  x.has_after_op_ = seen[Fx::kAfterOpFieldNumber];
  x.before_op_ = Low32(values[Fx::kBeforeOpFieldNumber]);
  x.has_before_op_ = seen[Fx::kBeforeOpFieldNumber];
  x.gpu_bytes_ = static_cast<int64_t>(values[Fx::kGpuBytesFieldNumber]);
  x.release_op_ = Low32(values[Fx::kReleaseOpFieldNumber]);
  x.has_release_op_ = seen[Fx::kReleaseOpFieldNumber];
  return true;
}

}  // namespace

bool DecodeWireTrace(absl::string_view bytes, WireTrace& trace) {
  trace = WireTrace();
  CanonicalReader in(bytes);
  uint32_t field = 0;
  uint32_t wire_type = 0;
  absl::string_view payload;
  while (!in.done()) {
    if (!in.Tag(field, wire_type) || wire_type != kLengthDelimited)
      return false;
    switch (field) {
      case Tr::kNameFieldNumber:
        if (!in.Name(trace.name_)) return false;
        break;
      case Tr::kOperatorsFieldNumber:
        // Past the limits, which conversion refuses anyway, the message is
        // left to protobuf, so that the view never grows without bound.
        if (!in.Bytes(payload) ||
            trace.operators_.size() > static_cast<size_t>(kMaxOperators) ||
            !DecodeOperator(payload, trace.operators_.emplace_back()))
          return false;
        break;
      case Tr::kTensorsFieldNumber:
        if (!in.Bytes(payload) ||
            trace.tensors_.size() > static_cast<size_t>(kMaxTensors) ||
            trace.ints_.size() > static_cast<size_t>(kMaxRelations) ||
            !DecodeTensor(payload, trace.ints_, trace.tensors_.emplace_back()))
          return false;
        break;
      case Tr::kFixedTransfersFieldNumber:
        if (!in.Bytes(payload) ||
            trace.fixed_transfers_.size() >
                static_cast<size_t>(kMaxFixedTransfers) ||
            !DecodeFixedTransfer(payload,
                                 trace.fixed_transfers_.emplace_back()))
          return false;
        break;
      default:
        return false;
    }
  }
  for (WireTensor& t : trace.tensors_) t.ints_ = trace.ints_.data();
  return true;
}

bool SplitField(absl::string_view message, int field,
                absl::string_view& field_bytes, std::string& rest) {
  field_bytes = absl::string_view();
  rest.clear();
  bool seen = false;
  CanonicalReader in(message);
  while (!in.done()) {
    const char* start = in.position();
    uint32_t number = 0;
    uint32_t wire_type = 0;
    if (!in.Tag(number, wire_type)) return false;
    if (static_cast<int>(number) == field) {
      if (seen || wire_type != kLengthDelimited || !in.Bytes(field_bytes))
        return false;
      seen = true;
    } else {
      if (!in.Skip(number, wire_type)) return false;
      rest.append(start, static_cast<size_t>(in.position() - start));
    }
  }
  return true;
}

}  // namespace slackswap
