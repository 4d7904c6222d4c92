// File: trace_wire.h
//
// A read-only view of a serialized slackswap.v1.Trace, decoded without
// building the protobuf message: no object per operator or tensor and no
// string per name. It offers the accessors of the generated v1::Trace that
// trace validation reads, so that one set of rules
// (simulator/trace_validation.h) checks both. Internal to the trace
// conversion: callers use TraceFromWire (trace_convert.h). Field numbers are
// the generated constants (v1::Tensor::kUseOpsFieldNumber, ...).
//
// The decoder takes only the form that protobuf serializers write: each
// known field with its declared wire type, varints in their shortest form,
// repeated integers packed and written once per tensor. Anything else
// (unknown fields, unpacked or split repeated fields, groups, padded varints,
// malformed bytes) makes DecodeWireTrace return false, and the caller parses
// the message with protobuf, which decides. Names are taken as bytes:
// conversion rejects one that is not UTF-8, naming its field, where protobuf
// would reject the whole message. So the view never accepts what protobuf
// would reject, and never reads what protobuf would read differently.
#ifndef SLACKSWAP_SERVICE_TRACE_WIRE_H_
#define SLACKSWAP_SERVICE_TRACE_WIRE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "slackswap/v1/trace.pb.h"

namespace slackswap {

struct WireOperator {
  absl::string_view name() const { return name_; }
  v1::Phase phase() const { return static_cast<v1::Phase>(phase_); }
  v1::OpKind kind() const { return static_cast<v1::OpKind>(kind_); }
  int64_t duration_ns() const { return duration_ns_; }
  int32_t block_index() const { return block_index_; }
  int64_t workspace_bytes() const { return workspace_bytes_; }
  int64_t flops() const { return flops_; }
  int64_t memory_traffic_bytes() const { return memory_traffic_bytes_; }

  absl::string_view name_;
  int32_t phase_ = 0;
  int32_t kind_ = 0;
  int64_t duration_ns_ = 0;
  int32_t block_index_ = 0;
  int64_t workspace_bytes_ = 0;
  int64_t flops_ = 0;
  int64_t memory_traffic_bytes_ = 0;
};

struct WireTensor {
  absl::string_view name() const { return name_; }
  int64_t size_bytes() const { return size_bytes_; }
  int32_t producer_op() const { return producer_op_; }
  int use_ops_size() const { return use_ops_count_; }
  int32_t use_ops(int j) const { return ints_[use_ops_begin_ + j]; }
  int64_t recompute_duration_ns() const { return recompute_duration_ns_; }
  int recompute_inputs_size() const { return recompute_inputs_count_; }
  int32_t recompute_inputs(int j) const {
    return ints_[recompute_inputs_begin_ + j];
  }
  bool swap_forbidden() const { return swap_forbidden_; }
  bool recompute_forbidden() const { return recompute_forbidden_; }

  absl::string_view name_;
  int64_t size_bytes_ = 0;
  int32_t producer_op_ = 0;
  int64_t recompute_duration_ns_ = 0;
  bool swap_forbidden_ = false;
  bool recompute_forbidden_ = false;
  // use_ops and recompute_inputs: ranges of the trace's integer pool.
  const int32_t* ints_ = nullptr;
  int use_ops_begin_ = 0;
  int use_ops_count_ = 0;
  int recompute_inputs_begin_ = 0;
  int recompute_inputs_count_ = 0;
};

// The optional indices keep their presence, as the generated has_*() do.
struct WireFixedTransfer {
  absl::string_view name() const { return name_; }
  v1::Direction direction() const {
    return static_cast<v1::Direction>(direction_);
  }
  int64_t size_bytes() const { return size_bytes_; }
  bool has_after_op() const { return has_after_op_; }
  int32_t after_op() const { return after_op_; }
  bool has_before_op() const { return has_before_op_; }
  int32_t before_op() const { return before_op_; }
  int64_t gpu_bytes() const { return gpu_bytes_; }
  bool has_release_op() const { return has_release_op_; }
  int32_t release_op() const { return release_op_; }

  absl::string_view name_;
  int32_t direction_ = 0;
  int64_t size_bytes_ = 0;
  int32_t after_op_ = 0;
  int32_t before_op_ = 0;
  int64_t gpu_bytes_ = 0;
  int32_t release_op_ = 0;
  bool has_after_op_ = false;
  bool has_before_op_ = false;
  bool has_release_op_ = false;
};

// Names point into the decoded bytes, which must outlive the view.
struct WireTrace {
  absl::string_view name() const { return name_; }
  int operators_size() const { return static_cast<int>(operators_.size()); }
  const WireOperator& operators(int i) const { return operators_[i]; }
  int tensors_size() const { return static_cast<int>(tensors_.size()); }
  const WireTensor& tensors(int i) const { return tensors_[i]; }
  int fixed_transfers_size() const {
    return static_cast<int>(fixed_transfers_.size());
  }
  const WireFixedTransfer& fixed_transfers(int i) const {
    return fixed_transfers_[i];
  }

  absl::string_view name_;
  std::vector<WireOperator> operators_;
  std::vector<WireTensor> tensors_;
  std::vector<int32_t> ints_;
  std::vector<WireFixedTransfer> fixed_transfers_;
};

// Decodes `bytes` (a serialized slackswap.v1.Trace) into `trace`, in one pass
// over the bytes. False: the bytes are not in the form described above (or
// not a valid message); `trace` is then unspecified.
bool DecodeWireTrace(absl::string_view bytes, WireTrace& trace);

// Splits a serialized message around one of its length-delimited fields (a
// request's trace): `field_bytes` gets that field's payload (empty when the
// field is absent) and `rest` the other fields, byte for byte, which parse as
// the message without that field. False when the field appears more than
// once (protobuf would merge the parts), or the bytes hold a group or are
// malformed: then parse the whole message.
bool SplitField(absl::string_view message, int field,
                absl::string_view& field_bytes, std::string& rest);

}  // namespace slackswap

#endif  // SLACKSWAP_SERVICE_TRACE_WIRE_H_
