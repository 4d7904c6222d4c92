// File: utf8.h
//
// UTF-8 well-formedness, as protobuf requires of a string field.
#ifndef SLACKSWAP_BASE_UTF8_H_
#define SLACKSWAP_BASE_UTF8_H_

#include "absl/strings/string_view.h"

namespace slackswap {

// True when `s` is well-formed UTF-8 (no overlong forms, no surrogates,
// nothing above U+10FFFF).
bool IsWellFormedUtf8(absl::string_view s);

}  // namespace slackswap

#endif  // SLACKSWAP_BASE_UTF8_H_
