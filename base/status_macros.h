// Small status-propagation macros. Abseil 20220623 (Debian 12) has no
// status_macros.h, so the project carries its own two.
//
// Example:
//   absl::StatusOr<Trace> Load(...) {
//     SLACKSWAP_RETURN_IF_ERROR(Check(...));
//     SLACKSWAP_ASSIGN_OR_RETURN(Trace trace, Parse(...));
//     return trace;
//   }
#ifndef SLACKSWAP_BASE_STATUS_MACROS_H_
#define SLACKSWAP_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SLACKSWAP_RETURN_IF_ERROR(expr)                    \
  do {                                                     \
    ::absl::Status slackswap_status_ = (expr);             \
    if (!slackswap_status_.ok()) return slackswap_status_; \
  } while (false)

#define SLACKSWAP_STATUS_CONCAT_INNER_(a, b) a##b
#define SLACKSWAP_STATUS_CONCAT_(a, b) SLACKSWAP_STATUS_CONCAT_INNER_(a, b)

#define SLACKSWAP_ASSIGN_OR_RETURN(lhs, expr) \
  SLACKSWAP_ASSIGN_OR_RETURN_IMPL_(           \
      SLACKSWAP_STATUS_CONCAT_(slackswap_statusor_, __LINE__), lhs, expr)

// `statusor` names a variable and `lhs` may be a declaration ("Trace t"):
// neither can be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define SLACKSWAP_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                     \
  if (!statusor.ok()) return std::move(statusor).status();    \
  lhs = std::move(statusor).value()
// NOLINTEND(bugprone-macro-parentheses)

#endif  // SLACKSWAP_BASE_STATUS_MACROS_H_
