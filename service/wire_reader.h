// File: wire_reader.h
//
// Reading protobuf's wire format field by field, without a message: the
// trace decoder (trace_wire.h) and the request counts (wire_counts.h).
// Internal to service/.
//
// Two forms: kCanonical takes only what protobuf serializers write (varints
// in their shortest form, no groups), so that a decoder built on it never
// reads bytes protobuf would read differently; kAny takes everything
// protobuf's parser takes (padded varints, groups nested up to 100 deep).
// Every read returns false on bytes it does not take.
#ifndef SLACKSWAP_SERVICE_WIRE_READER_H_
#define SLACKSWAP_SERVICE_WIRE_READER_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace slackswap {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5
};

enum class WireForm { kCanonical, kAny };

class WireReader {
 public:
  WireReader(absl::string_view bytes, WireForm form)
      : p_(bytes.data()), end_(bytes.data() + bytes.size()), form_(form) {}

  bool done() const { return p_ == end_; }
  const char* position() const { return p_; }

  // A varint of at most 10 bytes (kCanonical: in its shortest form).
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
        // A padded varint is not the shortest form.
        if (form_ == WireForm::kCanonical && byte == 0 && i > 0) return false;
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

  // Passes over the value of field `field` (a group, kAny only, up to its
  // end with what it nests).
  bool Skip(uint32_t field, uint32_t wire_type) {
    return Skip(field, wire_type, 0);
  }

 private:
  static constexpr int kMaxGroupDepth = 100;

  bool Skip(uint32_t field, uint32_t wire_type, int depth) {
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
      case kStartGroup: {
        if (form_ == WireForm::kCanonical || depth >= kMaxGroupDepth)
          return false;
        while (!done()) {
          uint32_t inner = 0, inner_type = 0;
          if (!Tag(inner, inner_type)) return false;
          if (inner_type == kEndGroup) return inner == field;
          if (!Skip(inner, inner_type, depth + 1)) return false;
        }
        return false;
      }
      default:
        return false;
    }
  }

  bool Advance(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) return false;
    p_ += n;
    return true;
  }

  const char* p_;
  const char* end_;
  WireForm form_;
};

}  // namespace slackswap

#endif  // SLACKSWAP_SERVICE_WIRE_READER_H_
