#include "service/trace_wire.h"

#include <cstring>

#include "base/utf8.h"
#include "simulator/trace_limits.h"

namespace slackswap {
namespace {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kFixed32 = 5
};

// Reads protobuf wire primitives. Every read returns false on malformed or
// non-minimal input, which the decoder leaves to protobuf.
class WireReader {
 public:
  explicit WireReader(absl::string_view bytes)
      : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}

  bool done() const { return p_ == end_; }

  // A varint of at most 10 bytes in its shortest form.
  bool Varint(uint64_t& value) {
    if (p_ != end_ && static_cast<uint8_t>(*p_) < 0x80) {  // one byte
      value = static_cast<uint8_t>(*p_++);
      return true;
    }
    uint64_t result = 0;
    for (int i = 0; i < 10 && p_ != end_; ++i) {
      const auto byte = static_cast<uint8_t>(*p_++);
      result |= uint64_t{byte & 0x7Fu} << (7 * i);
      if (byte < 0x80) {
        if (byte == 0 && i > 0) return false;  // padded: not the shortest
        value = result;
        return true;
      }
    }
    return false;
  }

  bool Tag(uint32_t& field, uint32_t& wire_type) {
    uint64_t tag = 0;
    if (!Varint(tag) || tag > 0xFFFFFFFFu) return false;
    field = static_cast<uint32_t>(tag >> 3);
    wire_type = static_cast<uint32_t>(tag & 7);
    return field != 0;
  }

  // The payload of a length-delimited field.
  bool Bytes(absl::string_view& payload) {
    uint64_t length = 0;
    if (!Varint(length) || length > static_cast<uint64_t>(end_ - p_))
      return false;
    payload = absl::string_view(p_, static_cast<size_t>(length));
    p_ += length;
    return true;
  }

  // Any bytes: conversion rejects a name that is not UTF-8 with its field
  // path (protobuf would reject the whole message, and log it).
  bool Name(absl::string_view& name) { return Bytes(name); }

  // Passes over a field's value; groups are not taken.
  bool Skip(uint32_t wire_type) {
    uint64_t ignored = 0;
    absl::string_view payload;
    switch (wire_type) {
      case kVarint:
        return Varint(ignored);
      case kLengthDelimited:
        return Bytes(payload);
      case kFixed64:
        return Advance(8);
      case kFixed32:
        return Advance(4);
      default:
        return false;
    }
  }

  const char* position() const { return p_; }

 private:
  bool Advance(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) return false;
    p_ += n;
    return true;
  }

  const char* p_;
  const char* end_;
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
  WireReader in(bytes);
  uint64_t values[kLastField + 1] = {};
  uint32_t field = 0;
  uint32_t wire_type = 0;
  while (!in.done()) {
    if (!in.Tag(field, wire_type)) return false;
    if (field == Op::kNameFieldNumber) {
      if (wire_type != kLengthDelimited || !in.Name(op.name_)) return false;
    } else if (field > kLastField) {
      if (!in.Skip(wire_type)) return false;  // a newer or runtime-only field
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
  WireReader in(bytes);
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
  WireReader in(bytes);
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
      if (!in.Skip(wire_type)) return false;
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

}  // namespace

bool DecodeWireTrace(absl::string_view bytes, WireTrace& trace) {
  trace = WireTrace();
  WireReader in(bytes);
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
  WireReader in(message);
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
      if (!in.Skip(wire_type)) return false;
      rest.append(start, static_cast<size_t>(in.position() - start));
    }
  }
  return true;
}

}  // namespace slackswap
