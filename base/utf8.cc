#include "base/utf8.h"

#include <cstdint>
#include <cstring>

namespace slackswap {

bool IsWellFormedUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    // Names are mostly ASCII: eight bytes at a time while no high bit is set.
    uint64_t word = 0;
    if (s.size() - i >= sizeof(word)) {
      std::memcpy(&word, s.data() + i, sizeof(word));
      if ((word & 0x8080808080808080u) == 0) {
        i += sizeof(word);
        continue;
      }
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t length = 0;
    uint32_t code = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
      code = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      code = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      code = c & 0x07;
    } else {
      return false;
    }
    if (s.size() - i < length) return false;
    for (size_t k = 1; k < length; ++k) {
      const auto continuation = static_cast<unsigned char>(s[i + k]);
      if ((continuation & 0xC0) != 0x80) return false;
      code = (code << 6) | (continuation & 0x3F);
    }
    if (length == 3 && (code < 0x800 || (code >= 0xD800 && code <= 0xDFFF)))
      return false;
    if (length == 4 && (code < 0x10000 || code > 0x10FFFF)) return false;
    i += length;
  }
  return true;
}

}  // namespace slackswap
