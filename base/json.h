// File: json.h
//
// A string as a JSON string literal, for the few places that write JSON by
// hand (the call log, the Chrome trace).
#ifndef SLACKSWAP_BASE_JSON_H_
#define SLACKSWAP_BASE_JSON_H_

#include <string>

#include "absl/strings/string_view.h"

namespace slackswap {

// `s` quoted, with '"', '\' and control characters escaped. Other bytes pass
// through as they are.
std::string JsonQuote(absl::string_view s);

}  // namespace slackswap

#endif  // SLACKSWAP_BASE_JSON_H_
