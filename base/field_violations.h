// File: field_violations.h
//
// Validation errors that name the offending field. Validators collect
// violations (a field path such as `trace.tensors[12].use_ops[3]` and a short
// description) and turn them into one INVALID_ARGUMENT absl::Status whose
// message names the first violation and whose payload carries all of them, so
// that the RPC edge can return them as google.rpc.BadRequest field
// violations.
//
// Example:
//   FieldViolations violations;
//   if (size < 0) violations.Add(absl::StrCat(path, ".size_bytes"), "must be >=
//   0"); return violations.ToStatus();  // OkStatus() when nothing was added
#ifndef SLACKSWAP_BASE_FIELD_VIOLATIONS_H_
#define SLACKSWAP_BASE_FIELD_VIOLATIONS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace slackswap {

struct FieldViolation {
  std::string field;
  std::string description;
};

class FieldViolations {
 public:
  // At most this many violations are kept; later ones are counted only.
  static constexpr int kMaxKept = 32;

  void Add(std::string field, std::string description);
  bool empty() const { return total_ == 0; }
  // True once kMaxKept violations were added: validators may stop early.
  bool full() const { return total_ >= kMaxKept; }
  int total() const { return total_; }
  const std::vector<FieldViolation>& kept() const { return kept_; }

  // OkStatus() if empty; otherwise INVALID_ARGUMENT, message
  // "<field>: <description>" of the first violation (plus a count of the
  // others), and every kept violation in the payload.
  absl::Status ToStatus() const;

 private:
  std::vector<FieldViolation> kept_;
  int total_ = 0;
};

// Builds an INVALID_ARGUMENT status for a single field.
absl::Status InvalidField(absl::string_view field,
                          absl::string_view description);

// The same as RESOURCE_EXHAUSTED: the input is well-formed but too large or
// too many (a field path still says which).
absl::Status TooLargeField(absl::string_view field,
                           absl::string_view description);

// The violations carried by a status made by FieldViolations::ToStatus or
// InvalidField; empty for any other status.
std::vector<FieldViolation> FieldViolationsOf(const absl::Status& status);

// `status` (its code and message) carrying `violations` as FieldViolationsOf
// reads them: how a status that crossed the wire gets them back.
absl::Status WithFieldViolations(const absl::Status& status,
                                 const std::vector<FieldViolation>& violations);

// `status` with every field path that starts with `from` (a whole path
// component) starting with `to` instead, in the message and the payload:
// RenameField(s, "budget", "budgets[2]") turns "budget.bytes" into
// "budgets[2].bytes"; an empty `to` drops the prefix ("workload.batch" ->
// "batch"). Other statuses are returned unchanged.
absl::Status RenameField(const absl::Status& status, absl::string_view from,
                         absl::string_view to);

}  // namespace slackswap

#endif  // SLACKSWAP_BASE_FIELD_VIOLATIONS_H_
