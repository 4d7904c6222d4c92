// Counting repeated fields from a message's bytes (service/wire_counts.h):
// the counts protobuf would build, in every encoding it parses.
#include "service/wire_counts.h"

#include <string>
#include <vector>

#include "google/protobuf/unknown_field_set.h"
#include "gtest/gtest.h"
#include "slackswap/v1/service.pb.h"

namespace slackswap {
namespace {

TEST(WireCountsTest, CountsWhatProtobufParses) {
  v1::CompareRequest request;
  for (int i = 0; i < 5; ++i) request.add_budgets()->set_bytes(i);
  for (int i = 0; i < 300; ++i) request.add_policies(v1::POLICY_SLACKSWAP);
  request.mutable_trace()->add_operators();
  // An unknown group in the trace, nested: skipped, not counted.
  request.mutable_trace()
      ->GetReflection()
      ->MutableUnknownFields(request.mutable_trace())
      ->AddGroup(50)
      ->AddGroup(51)
      ->AddVarint(1, 7);
  const std::string bytes = request.SerializeAsString();
  v1::CompareRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(CountElements(bytes, 3, WireElement::kMessage), 5);
  EXPECT_EQ(CountElements(bytes, 4, WireElement::kVarint), 300);  // packed
  std::vector<absl::string_view> traces;
  EXPECT_TRUE(ForEachLengthDelimited(
      bytes, 1, [&](absl::string_view t) { traces.push_back(t); }));
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(CountElements(traces[0], v1::Trace::kOperatorsFieldNumber,
                          WireElement::kMessage),
            1);
  // Unpacked policies, and a padded (non-shortest) varint tag length:
  // protobuf takes both.
  std::string unpacked;
  for (int i = 0; i < 3; ++i) unpacked += std::string("\x20\x01", 2);
  unpacked += std::string("\xa0\x80\x00\x02", 4);  // field 4, padded tag
  ASSERT_TRUE(parsed.ParseFromString(unpacked));
  EXPECT_EQ(parsed.policies_size(), 4);
  EXPECT_EQ(CountElements(unpacked, 4, WireElement::kVarint), 4);
  // Packed doubles.
  v1::FrontierRequest frontier;
  for (int i = 0; i < 7; ++i) frontier.add_budget_fractions(0.1 * i);
  EXPECT_EQ(
      CountElements(frontier.SerializeAsString(), 3, WireElement::kFixed64), 7);
}

TEST(WireCountsTest, MalformedBytesAreNotCounted) {
  for (const std::string& bad :
       {std::string("\x1a\x05\x00", 3),  // length past the end
        std::string("\x1b\x08\x01", 3),  // group never closed
        std::string("\x1b\x24", 2),      // closed by another field
        std::string("\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 11)}) {
    EXPECT_FALSE(CountElements(bad, 3, WireElement::kMessage).has_value());
    EXPECT_FALSE(ForEachLengthDelimited(bad, 3, [](absl::string_view) {}));
    v1::CompareRequest parsed;
    EXPECT_FALSE(parsed.ParseFromString(bad));
  }
}

TEST(WireCountsTest, CopyWithoutFieldParsesAsTheMessageWithoutIt) {
  v1::PlanNodeRequest request;
  request.set_steps(7);
  for (int i = 0; i < 3; ++i) request.add_jobs()->set_name("j");
  request.mutable_hardware()->set_name("h");
  std::string rest;
  ASSERT_TRUE(CopyWithoutField(request.SerializeAsString(), 2, rest));
  v1::PlanNodeRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(rest));
  EXPECT_EQ(parsed.jobs_size(), 0);
  EXPECT_EQ(parsed.steps(), 7);
  EXPECT_EQ(parsed.hardware().name(), "h");
}

}  // namespace
}  // namespace slackswap
