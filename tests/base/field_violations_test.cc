// FieldViolations, and the renaming that the service applies to the paths of
// nested messages (a request's budgets[i], a generated trace's workload).
#include "base/field_violations.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace slackswap {
namespace {

TEST(FieldViolationsTest, TheMessageNamesTheFirstAndCountsEveryOther) {
  FieldViolations v;
  for (int i = 0; i < 40; ++i)
    v.Add(absl::StrCat("trace.tensors[", i, "].size_bytes"), "must be >= 0");
  EXPECT_TRUE(v.full());
  const absl::Status status = v.ToStatus();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "trace.tensors[0].size_bytes: must be >= 0 (and 39 more)");
  EXPECT_EQ(FieldViolationsOf(status).size(),
            static_cast<size_t>(FieldViolations::kMaxKept));
}

TEST(RenameFieldTest, RenamesWholeComponentsAndKeepsTheCount) {
  FieldViolations v;
  for (int i = 0; i < 40; ++i) v.Add("budget.bytes", "must be >= 0");
  const absl::Status renamed =
      RenameField(v.ToStatus(), "budget", "budgets[2]");
  // 40 violations, 32 kept: the count is still of all 40.
  EXPECT_EQ(renamed.message(), "budgets[2].bytes: must be >= 0 (and 39 more)");
  const std::vector<FieldViolation> kept = FieldViolationsOf(renamed);
  ASSERT_EQ(kept.size(), static_cast<size_t>(FieldViolations::kMaxKept));
  for (const FieldViolation& f : kept) EXPECT_EQ(f.field, "budgets[2].bytes");

  // Only whole components: "budgets" does not start with the component
  // "budget".
  const absl::Status other =
      RenameField(InvalidField("budgets[0]", "x"), "budget", "b");
  EXPECT_EQ(other.message(), "budgets[0]: x");
  // An empty target drops the prefix and its dot.
  EXPECT_EQ(RenameField(InvalidField("workload.batch", "must be in [1, 9]"),
                        "workload", "")
                .message(),
            "batch: must be in [1, 9]");
  // The code is kept.
  EXPECT_EQ(RenameField(TooLargeField("trace.operators", "too many"), "trace",
                        "request.trace")
                .code(),
            absl::StatusCode::kResourceExhausted);
  // A status without violations passes through.
  const absl::Status plain = absl::InternalError("boom");
  EXPECT_EQ(RenameField(plain, "budget", "b"), plain);
}

}  // namespace
}  // namespace slackswap
