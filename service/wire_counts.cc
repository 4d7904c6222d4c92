#include "service/wire_counts.h"

namespace slackswap {
namespace {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5
};

constexpr int kMaxGroupDepth = 100;

// Reads the wire format as protobuf's parser accepts it.
class Reader {
 public:
  explicit Reader(absl::string_view bytes)
      : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}

  bool done() const { return p_ == end_; }
  const char* position() const { return p_; }

  bool Varint(uint64_t& value) {
    uint64_t result = 0;
    for (int i = 0; i < 10 && p_ != end_; ++i) {
      const auto byte = static_cast<uint8_t>(*p_++);
      result |= uint64_t{byte & 0x7Fu} << (7 * i);
      if (byte < 0x80) {
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

  bool Bytes(absl::string_view& payload) {
    uint64_t length = 0;
    if (!Varint(length) || length > static_cast<uint64_t>(end_ - p_))
      return false;
    payload = absl::string_view(p_, static_cast<size_t>(length));
    p_ += length;
    return true;
  }

  // Passes over one field's value (a group up to its end, with what it
  // nests).
  bool Skip(uint32_t field, uint32_t wire_type, int depth = 0) {
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
        if (depth >= kMaxGroupDepth) return false;
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

 private:
  bool Advance(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) return false;
    p_ += n;
    return true;
  }

  const char* p_;
  const char* end_;
};

// Varints in a packed payload: the bytes that end one.
int64_t PackedVarints(absl::string_view payload) {
  int64_t n = 0;
  for (char c : payload) n += static_cast<uint8_t>(c) < 0x80 ? 1 : 0;
  return n;
}

}  // namespace

std::optional<int64_t> CountElements(absl::string_view message, int field,
                                     WireElement element) {
  Reader in(message);
  int64_t count = 0;
  while (!in.done()) {
    uint32_t number = 0, wire_type = 0;
    if (!in.Tag(number, wire_type)) return std::nullopt;
    if (static_cast<int>(number) != field) {
      if (!in.Skip(number, wire_type)) return std::nullopt;
      continue;
    }
    if (wire_type == kLengthDelimited && element != WireElement::kMessage) {
      absl::string_view packed;  // a packed run
      if (!in.Bytes(packed)) return std::nullopt;
      switch (element) {
        case WireElement::kVarint:
          count += PackedVarints(packed);
          break;
        case WireElement::kFixed64:
          count += static_cast<int64_t>(packed.size() / 8);
          break;
        case WireElement::kFixed32:
          count += static_cast<int64_t>(packed.size() / 4);
          break;
        case WireElement::kMessage:
          break;
      }
      continue;
    }
    if (!in.Skip(number, wire_type)) return std::nullopt;
    ++count;
  }
  return count;
}

bool CopyWithoutField(absl::string_view message, int field, std::string& rest) {
  rest.clear();
  Reader in(message);
  while (!in.done()) {
    const char* start = in.position();
    uint32_t number = 0, wire_type = 0;
    if (!in.Tag(number, wire_type) || !in.Skip(number, wire_type)) return false;
    if (static_cast<int>(number) != field)
      rest.append(start, static_cast<size_t>(in.position() - start));
  }
  return true;
}

bool ForEachLengthDelimited(absl::string_view message, int field,
                            absl::FunctionRef<void(absl::string_view)> visit) {
  Reader in(message);
  while (!in.done()) {
    uint32_t number = 0, wire_type = 0;
    if (!in.Tag(number, wire_type)) return false;
    if (static_cast<int>(number) == field && wire_type == kLengthDelimited) {
      absl::string_view payload;
      if (!in.Bytes(payload)) return false;
      visit(payload);
      continue;
    }
    if (!in.Skip(number, wire_type)) return false;
  }
  return true;
}

}  // namespace slackswap
