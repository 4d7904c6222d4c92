#include "service/wire_counts.h"

#include "service/wire_reader.h"

namespace slackswap {
namespace {

// Varints in a packed payload: the bytes that end one.
int64_t PackedVarints(absl::string_view payload) {
  int64_t n = 0;
  for (char c : payload) n += static_cast<uint8_t>(c) < 0x80 ? 1 : 0;
  return n;
}

}  // namespace

std::optional<int64_t> CountElements(absl::string_view message, int field,
                                     WireElement element) {
  WireReader in(message, WireForm::kAny);
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
  WireReader in(message, WireForm::kAny);
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
  WireReader in(message, WireForm::kAny);
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
