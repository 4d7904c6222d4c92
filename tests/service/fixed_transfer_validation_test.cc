// The rules of a trace's fixed transfers (docs/event-model.md, "Trace"): one
// test per rule, each asserting the status code and the field path of the
// first violation; and what a valid transfer adds to the compact trace.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "base/field_violations.h"
#include "gtest/gtest.h"
#include "service/trace_convert.h"
#include "simulator/trace_limits.h"
#include "simulator/trace_validation.h"
#include "tests/service/tiny_proto_trace.h"

namespace slackswap {
namespace {

using ::slackswap::testing::TinyProtoTrace;

constexpr v1::Direction kD2H = v1::DIRECTION_D2H;
constexpr v1::Direction kH2D = v1::DIRECTION_H2D;

// Two forward and two backward operators (op 3 with a workspace of 7) and
// two tensors; no fixed transfers.
TinyProtoTrace Valid() {
  TinyProtoTrace t;
  t.Fwd(10), t.Fwd(10), t.Bwd(10), t.Bwd(10, 0, 7);
  t.Tensor(100, 0, {1, 3});
  t.Tensor(50, 1, {2});
  return t;
}

void ExpectViolation(
    const TinyProtoTrace& t, const std::string& field,
    absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
  const absl::Status status = TraceFromProto(t.proto).status();
  ASSERT_EQ(status.code(), code) << status;
  const std::vector<FieldViolation> violations = FieldViolationsOf(status);
  ASSERT_FALSE(violations.empty()) << status;
  EXPECT_EQ(violations[0].field, field) << status;
  EXPECT_TRUE(absl::StartsWith(status.message(), field + ": ")) << status;
}

TEST(FixedTransferValidationTest, ValidTransfersAreBuiltAndSourcesAllocated) {
  TinyProtoTrace t = Valid();
  t.Fixed(kD2H, 30, /*after_op=*/3, -1, /*gpu_bytes=*/30);       // a gradient
  t.Fixed(kH2D, 40, -1, /*before_op=*/2, 40, /*release_op=*/2);  // a param
  t.Fixed(kD2H, 5);                          // no indices, nothing held
  t.Fixed(kH2D, 6, 0, 3);                    // after op 0, before op 3
  t.Fixed(kD2H, 8, /*after_op=*/3, -1, 12);  // a second source of op 3
  t.proto.mutable_fixed_transfers(2)->set_after_op(0);  // set to zero
  absl::StatusOr<Trace> trace = TraceFromProto(t.proto);
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_EQ(trace->num_fixed_transfers(), 5);
  const FixedTransfer& grad = trace->fixed_transfers[0];
  EXPECT_EQ(grad.direction, Direction::kD2H);
  EXPECT_EQ(grad.size_bytes, 30);
  EXPECT_EQ(grad.after_op, 3);
  EXPECT_EQ(grad.before_op, -1);
  EXPECT_EQ(grad.gpu_bytes, 30);
  EXPECT_EQ(grad.release_op, -1);
  const FixedTransfer& param = trace->fixed_transfers[1];
  EXPECT_EQ(param.direction, Direction::kH2D);
  EXPECT_EQ(param.after_op, -1);
  EXPECT_EQ(param.before_op, 2);
  EXPECT_EQ(param.release_op, 2);
  EXPECT_EQ(trace->fixed_transfers[2].after_op, 0);
  EXPECT_EQ(trace->fixed_transfers[3].before_op, 3);
  // Op 3: its workspace and the two D2H sources; the H2D copy is not an
  // operator's allocation.
  EXPECT_EQ(trace->op_allocation_bytes,
            (std::vector<int64_t>{100, 50, 0, 7 + 30 + 12}));
  EXPECT_EQ(trace->total_tensor_bytes, 150);
}

TEST(FixedTransferValidationTest, RejectsUnspecifiedOrUnknownDirection) {
  TinyProtoTrace t = Valid();
  t.Fixed(kD2H, 1);
  t.Fixed(v1::DIRECTION_UNSPECIFIED, 1);
  ExpectViolation(t, "trace.fixed_transfers[1].direction");
  t.proto.mutable_fixed_transfers(1)->set_direction(
      static_cast<v1::Direction>(3));
  ExpectViolation(t, "trace.fixed_transfers[1].direction");
}

TEST(FixedTransferValidationTest, RejectsSizeOutsideQuantities) {
  for (int64_t bad : {int64_t{-1}, (int64_t{1} << 60) + 1,
                      std::numeric_limits<int64_t>::min()}) {
    TinyProtoTrace t = Valid();
    t.Fixed(kH2D, bad);
    ExpectViolation(t, "trace.fixed_transfers[0].size_bytes");
  }
  TinyProtoTrace edge = Valid();
  edge.Fixed(kH2D, int64_t{1} << 60);
  EXPECT_TRUE(TraceFromProto(edge.proto).ok());
}

TEST(FixedTransferValidationTest, RejectsGpuBytesOutsideQuantities) {
  for (int64_t bad : {int64_t{-1}, (int64_t{1} << 60) + 1}) {
    TinyProtoTrace t = Valid();
    t.Fixed(kD2H, 1, 0, -1, bad);
    ExpectViolation(t, "trace.fixed_transfers[0].gpu_bytes");
  }
}

TEST(FixedTransferValidationTest, RejectsSizesThatSumPast2To60) {
  TinyProtoTrace t = Valid();
  t.Fixed(kD2H, int64_t{1} << 60);
  t.Fixed(kH2D, 1);
  ExpectViolation(t, "trace.fixed_transfers");
  TinyProtoTrace u = Valid();
  u.Fixed(kD2H, 1, 0, -1, int64_t{1} << 59);
  u.Fixed(kH2D, 1, -1, 2, int64_t{1} << 59, 3);
  EXPECT_TRUE(TraceFromProto(u.proto).ok());
  u.Fixed(kD2H, 1, 1, -1, 1);  // one byte more on the GPU
  ExpectViolation(u, "trace.fixed_transfers");
}

TEST(FixedTransferValidationTest, RejectsAfterOpOutOfRange) {
  for (int32_t bad : {-1, -5, 4, std::numeric_limits<int32_t>::max()}) {
    TinyProtoTrace t = Valid();
    t.Fixed(kH2D, 1);
    t.proto.mutable_fixed_transfers(0)->set_after_op(bad);  // -1 is set too
    ExpectViolation(t, "trace.fixed_transfers[0].after_op");
  }
}

TEST(FixedTransferValidationTest, RejectsBeforeOpOutOfRange) {
  for (int32_t bad : {-1, 4}) {
    TinyProtoTrace t = Valid();
    t.Fixed(kD2H, 1);
    t.proto.mutable_fixed_transfers(0)->set_before_op(bad);
    ExpectViolation(t, "trace.fixed_transfers[0].before_op");
  }
}

// A transfer that starts after op k cannot be needed by op k or before.
TEST(FixedTransferValidationTest, RejectsBeforeOpNotAfterAfterOp) {
  for (int32_t before : {1, 2}) {
    TinyProtoTrace t = Valid();
    t.Fixed(kH2D, 1, /*after_op=*/2, before);
    ExpectViolation(t, "trace.fixed_transfers[0].before_op");
  }
  TinyProtoTrace ok = Valid();
  ok.Fixed(kH2D, 1, 2, 3);
  EXPECT_TRUE(TraceFromProto(ok.proto).ok());
}

TEST(FixedTransferValidationTest, RejectsD2hHoldingBytesWithoutAfterOp) {
  TinyProtoTrace t = Valid();
  t.Fixed(kD2H, 1, -1, 3, /*gpu_bytes=*/8);
  ExpectViolation(t, "trace.fixed_transfers[0].after_op");
}

TEST(FixedTransferValidationTest, RejectsD2hWithReleaseOp) {
  TinyProtoTrace t = Valid();
  t.Fixed(kD2H, 1, 2, -1, 8, /*release_op=*/3);
  ExpectViolation(t, "trace.fixed_transfers[0].release_op");
  TinyProtoTrace u = Valid();
  u.Fixed(kD2H, 1, -1, -1, 0, /*release_op=*/0);
  ExpectViolation(u, "trace.fixed_transfers[0].release_op");
}

TEST(FixedTransferValidationTest, RejectsH2dHoldingBytesWithoutBeforeOp) {
  TinyProtoTrace t = Valid();
  t.Fixed(kH2D, 1, -1, -1, /*gpu_bytes=*/8, /*release_op=*/3);
  ExpectViolation(t, "trace.fixed_transfers[0].before_op");
}

TEST(FixedTransferValidationTest, RejectsH2dHoldingBytesWithoutReleaseOp) {
  TinyProtoTrace t = Valid();
  t.Fixed(kH2D, 1, -1, 2, /*gpu_bytes=*/8);
  ExpectViolation(t, "trace.fixed_transfers[0].release_op");
}

// From before_op to the last operator: a copy is freed after the operator
// that reads it, and within the iteration.
TEST(FixedTransferValidationTest, RejectsH2dReleaseOpOutOfRange) {
  for (int32_t bad : {-1, 0, 1, 4}) {
    TinyProtoTrace t = Valid();
    t.Fixed(kH2D, 1, -1, /*before_op=*/2, 8);
    t.proto.mutable_fixed_transfers(0)->set_release_op(bad);
    ExpectViolation(t, "trace.fixed_transfers[0].release_op");
  }
  for (int32_t good : {2, 3}) {
    TinyProtoTrace t = Valid();
    t.Fixed(kH2D, 1, -1, 2, 8, good);
    EXPECT_TRUE(TraceFromProto(t.proto).ok()) << good;
  }
}

TEST(FixedTransferValidationTest, RejectsH2dReleaseOpWithoutGpuBytes) {
  TinyProtoTrace t = Valid();
  t.Fixed(kH2D, 1, -1, 2, /*gpu_bytes=*/0, /*release_op=*/3);
  ExpectViolation(t, "trace.fixed_transfers[0].release_op");
}

TEST(FixedTransferValidationTest, RejectsLongName) {
  TinyProtoTrace t = Valid();
  t.Fixed(kD2H, 1);
  t.proto.mutable_fixed_transfers(0)->set_name(std::string(257, 'x'));
  ExpectViolation(t, "trace.fixed_transfers[0].name");
  t.proto.mutable_fixed_transfers(0)->set_name(std::string(256, 'x'));
  EXPECT_TRUE(TraceFromProto(t.proto).ok());
}

// Operator, tensor and fixed-transfer problems come back in one answer.
TEST(FixedTransferValidationTest, ReportedWithTheOperatorsAndTensors) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_operators(1)->set_duration_ns(-1);
  t.proto.mutable_tensors(0)->set_size_bytes(-1);
  t.Fixed(kD2H, -1);
  t.Fixed(kH2D, 1, -1, 2, 8);
  std::vector<std::string> fields;
  for (const FieldViolation& v :
       FieldViolationsOf(TraceFromProto(t.proto).status()))
    fields.push_back(v.field);
  EXPECT_EQ(fields, (std::vector<std::string>{
                        "trace.operators[1].duration_ns",
                        "trace.tensors[0].size_bytes",
                        "trace.fixed_transfers[0].size_bytes",
                        "trace.fixed_transfers[1].release_op",
                    }));
}

// A message with more transfers than the limit would take gigabytes to
// build: this form of a trace only says it has them (the counts are checked
// before any element is read).
struct ManyTransfers {
  const v1::Trace& trace;
  absl::string_view name() const { return trace.name(); }
  int operators_size() const { return trace.operators_size(); }
  const v1::Operator& operators(int i) const { return trace.operators(i); }
  int tensors_size() const { return trace.tensors_size(); }
  const v1::Tensor& tensors(int i) const { return trace.tensors(i); }
  int fixed_transfers_size() const { return kMaxFixedTransfers + 1; }
  const v1::FixedTransfer& fixed_transfers(int) const {
    ADD_FAILURE() << "read a transfer past the limit";
    return v1::FixedTransfer::default_instance();
  }
};

struct ManyTransfersForm {
  static std::optional<Phase> PhaseOf(const v1::Operator& op) {
    return PhaseFromProto(op.phase());
  }
  static std::optional<OpKind> KindOf(const v1::Operator& op) {
    return KindFromProto(op.kind());
  }
  static std::optional<Direction> DirectionOf(const v1::FixedTransfer& x) {
    return DirectionFromProto(x.direction());
  }
};

TEST(FixedTransferValidationTest, RejectsTooManyAsResourceExhausted) {
  const TinyProtoTrace t = Valid();
  const absl::Status status =
      trace_validation::Validate<ManyTransfersForm>(ManyTransfers{t.proto})
          .status();
  ASSERT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_EQ(FieldViolationsOf(status)[0].field, "trace.fixed_transfers");
}

}  // namespace
}  // namespace slackswap
