#include "base/field_violations.h"

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace slackswap {
namespace {

constexpr absl::string_view kPayloadUrl = "type.slackswap.dev/field_violations";

// Field paths and descriptions are written by this project and contain no
// tabs or newlines, so a line-per-violation encoding is unambiguous.
std::string Encode(const std::vector<FieldViolation>& violations) {
  std::string out;
  for (const FieldViolation& v : violations) {
    absl::StrAppend(&out, v.field, "\t", v.description, "\n");
  }
  return out;
}

}  // namespace

void FieldViolations::Add(std::string field, std::string description) {
  ++total_;
  if (static_cast<int>(kept_.size()) < kMaxKept) {
    kept_.push_back({std::move(field), std::move(description)});
  }
}

absl::Status FieldViolations::ToStatus() const {
  if (empty()) return absl::OkStatus();
  std::string message =
      absl::StrCat(kept_[0].field, ": ", kept_[0].description);
  if (total_ > 1) absl::StrAppend(&message, " (and ", total_ - 1, " more)");
  absl::Status status = absl::InvalidArgumentError(message);
  status.SetPayload(kPayloadUrl, absl::Cord(Encode(kept_)));
  return status;
}

absl::Status InvalidField(absl::string_view field,
                          absl::string_view description) {
  FieldViolations violations;
  violations.Add(std::string(field), std::string(description));
  return violations.ToStatus();
}

absl::Status TooLargeField(absl::string_view field,
                           absl::string_view description) {
  const absl::Status invalid = InvalidField(field, description);
  absl::Status status = absl::ResourceExhaustedError(invalid.message());
  invalid.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    status.SetPayload(url, payload);
  });
  return status;
}

std::vector<FieldViolation> FieldViolationsOf(const absl::Status& status) {
  std::vector<FieldViolation> out;
  auto payload = status.GetPayload(kPayloadUrl);
  if (!payload.has_value()) return out;
  for (absl::string_view line :
       absl::StrSplit(std::string(*payload), '\n', absl::SkipEmpty())) {
    std::pair<std::string, std::string> parts =
        absl::StrSplit(line, absl::MaxSplits('\t', 1));
    out.push_back({parts.first, parts.second});
  }
  return out;
}

absl::Status WithFieldViolations(
    const absl::Status& status, const std::vector<FieldViolation>& violations) {
  absl::Status out = status;
  if (!violations.empty())
    out.SetPayload(kPayloadUrl, absl::Cord(Encode(violations)));
  return out;
}

absl::Status RenameField(const absl::Status& status, absl::string_view from,
                         absl::string_view to) {
  std::vector<FieldViolation> violations = FieldViolationsOf(status);
  if (violations.empty()) return status;
  auto rename = [&](const std::string& field) {
    if (!absl::StartsWith(field, from)) return field;
    const absl::string_view rest = absl::string_view(field).substr(from.size());
    if (!rest.empty() && rest[0] != '.' && rest[0] != '[') return field;
    if (to.empty() && !rest.empty() && rest[0] == '.')
      return std::string(rest.substr(1));
    return absl::StrCat(to, rest);
  };
  for (FieldViolation& v : violations) v.field = rename(v.field);
  // The message names the first violation; what follows it (the count of
  // the others, which may pass the kept ones) stays as it was.
  const std::string first =
      absl::StrCat(violations[0].field, ": ", violations[0].description);
  const absl::string_view message = status.message();
  const size_t colon = message.find(": ");
  std::string renamed = first;
  if (colon != absl::string_view::npos) {
    const absl::string_view rest = message.substr(colon + 2);
    if (absl::StartsWith(rest, violations[0].description)) {
      absl::StrAppend(&renamed, rest.substr(violations[0].description.size()));
    }
  }
  // Keep the original code (INVALID_ARGUMENT or RESOURCE_EXHAUSTED).
  return WithFieldViolations(absl::Status(status.code(), renamed), violations);
}

}  // namespace slackswap
