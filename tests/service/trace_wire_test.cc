// TraceFromWire against protobuf's parser and TraceFromProto: whenever the
// wire decoder answers, it answers exactly as they do; everything else it
// leaves to them.
#include "service/trace_wire.h"

#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/field_violations.h"
#include "google/protobuf/stubs/logging.h"
#include "gtest/gtest.h"
#include "service/trace_convert.h"
#include "service/wire_convert.h"
#include "simulator/hardware.h"
#include "simulator/workload.h"
#include "tests/service/tiny_proto_trace.h"
#include "tests/simulator/test_traces.h"

namespace slackswap {
namespace {

using testing::ExpectSameTrace;

// Checks TraceFromWire(bytes) against parsing and TraceFromProto; returns
// whether the wire decoder answered.
bool ExpectAgreesWithProtobuf(const std::string& bytes) {
  v1::Trace message;
  const bool parsed = message.ParseFromString(bytes);
  const std::optional<absl::StatusOr<Trace>> wire = TraceFromWire(bytes);
  if (!parsed) {
    // Protobuf rejects these bytes: the decoder leaves them to it, or rejects
    // them too (a name that is not UTF-8, with its field path).
    if (wire.has_value()) {
      EXPECT_FALSE(wire->ok()) << "protobuf rejects these bytes";
      return true;
    }
    return false;
  }
  if (!wire.has_value()) return false;
  const absl::StatusOr<Trace> expected = TraceFromProto(message);
  // ToString carries the code, the message and the field violations.
  EXPECT_EQ(wire->status().ToString(), expected.status().ToString());
  if (wire->ok() && expected.ok()) ExpectSameTrace(**wire, *expected);
  return true;
}

std::string Generated(const std::string& preset, int layers) {
  WorkloadSpec spec = *WorkloadPreset(preset);
  if (layers > 0) spec.layers = layers;
  return TraceSpecToProto(*GenerateTrace(spec, *HardwarePreset("a100")))
      .SerializeAsString();
}

TEST(TraceWireTest, DecodesGeneratedTracesLikeProtobuf) {
  for (const std::string preset :
       {"gpt2-xl", "bert-large", "llama-7b", "vgg16"}) {
    SCOPED_TRACE(preset);
    const std::string bytes = Generated(preset, 0);
    EXPECT_TRUE(ExpectAgreesWithProtobuf(bytes)) << "left to protobuf";
    const std::optional<absl::StatusOr<Trace>> wire = TraceFromWire(bytes);
    ASSERT_TRUE(wire.has_value());
    EXPECT_TRUE(wire->ok()) << wire->status();
  }
}

TEST(TraceWireTest, InvalidTracesGetTheSameFieldViolations) {
  const v1::Trace valid = TraceSpecToProto(*GenerateTrace(
      [] {
        WorkloadSpec spec = *WorkloadPreset("llama-7b");
        spec.layers = 2;
        return spec;
      }(),
      *HardwarePreset("a100")));
  const std::vector<void (*)(v1::Trace&)> breakages = {
      [](v1::Trace& t) { t.mutable_operators(1)->set_duration_ns(-5); },
      [](v1::Trace& t) {
        t.mutable_operators(0)->set_phase(v1::PHASE_BACKWARD);
      },
      [](v1::Trace& t) {
        t.mutable_operators(2)->set_kind(static_cast<v1::OpKind>(77));
      },
      [](v1::Trace& t) { t.mutable_operators(3)->set_block_index(-1); },
      [](v1::Trace& t) { t.mutable_tensors(0)->set_producer_op(1 << 30); },
      [](v1::Trace& t) { t.mutable_tensors(1)->set_use_ops(0, -3); },
      [](v1::Trace& t) { t.mutable_tensors(2)->clear_use_ops(); },
      [](v1::Trace& t) { t.mutable_tensors(2)->add_recompute_inputs(2); },
      [](v1::Trace& t) {
        t.mutable_tensors(0)->add_recompute_inputs(1);
        t.mutable_tensors(1)->add_recompute_inputs(0);
      },
      [](v1::Trace& t) {
        t.mutable_tensors(3)->set_size_bytes(int64_t{1} << 61);
      },
      [](v1::Trace& t) {
        t.mutable_tensors(3)->set_name(std::string(300, 'n'));
      },
      [](v1::Trace& t) { t.set_name(std::string(257, 'x')); },
      [](v1::Trace& t) { t.clear_operators(); },
      [](v1::Trace& t) {  // the last operator runs in backward
        t.mutable_tensors(0)->set_producer_op(t.operators_size() - 1);
      },
  };
  for (size_t i = 0; i < breakages.size(); ++i) {
    SCOPED_TRACE(i);
    v1::Trace broken = valid;
    breakages[i](broken);
    const std::string bytes = broken.SerializeAsString();
    EXPECT_TRUE(ExpectAgreesWithProtobuf(bytes)) << "left to protobuf";
    EXPECT_FALSE(TraceFromWire(bytes)->ok());
  }
}

// Appends a field to serialized bytes: tag, then the payload as given.
std::string WithField(std::string bytes, int field, int wire_type,
                      const std::string& payload) {
  bytes.push_back(static_cast<char>(field << 3 | wire_type));
  bytes += payload;
  return bytes;
}

// Fixed transfers: optional indices unset, set to zero and set negative (ten
// bytes on the wire), valid and broken, decoded as protobuf parses them.
TEST(TraceWireTest, DecodesFixedTransfersLikeProtobuf) {
  testing::TinyProtoTrace tiny;
  tiny.Fwd(10), tiny.Fwd(10), tiny.Bwd(10), tiny.Bwd(10);
  tiny.Tensor(64, 0, {3});
  tiny.Fixed(v1::DIRECTION_D2H, 100, /*after_op=*/2, -1, /*gpu_bytes=*/100);
  tiny.Fixed(v1::DIRECTION_H2D, 200, -1, /*before_op=*/1, 200,
             /*release_op=*/3);
  tiny.Fixed(v1::DIRECTION_H2D, 0);  // every field but direction at zero
  tiny.Fixed(v1::DIRECTION_D2H, 5, 0, 0);
  tiny.proto.mutable_fixed_transfers(3)->clear_before_op();
  tiny.proto.mutable_fixed_transfers(3)->set_name("");
  const std::string bytes = tiny.proto.SerializeAsString();
  ASSERT_TRUE(ExpectAgreesWithProtobuf(bytes)) << "left to protobuf";
  const absl::StatusOr<Trace> trace = *TraceFromWire(bytes);
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_EQ(trace->num_fixed_transfers(), 4);
  EXPECT_EQ(trace->fixed_transfers[2].after_op, -1);  // unset
  EXPECT_EQ(trace->fixed_transfers[3].after_op, 0);   // set to zero
  EXPECT_EQ(trace->fixed_transfers[1].release_op, 3);
  EXPECT_EQ(trace->op_allocation_bytes[2], 100);

  const std::vector<void (*)(v1::FixedTransfer&)> breakages = {
      [](v1::FixedTransfer& x) { x.set_after_op(-1); },  // set: invalid
      [](v1::FixedTransfer& x) { x.set_before_op(-7); },
      [](v1::FixedTransfer& x) { x.set_release_op(-2); },
      [](v1::FixedTransfer& x) { x.set_before_op(x.after_op()); },
      [](v1::FixedTransfer& x) { x.set_after_op(1 << 30); },
      [](v1::FixedTransfer& x) { x.set_size_bytes(-1); },
      [](v1::FixedTransfer& x) { x.set_gpu_bytes(int64_t{1} << 61); },
      [](v1::FixedTransfer& x) { x.set_direction(v1::DIRECTION_UNSPECIFIED); },
      [](v1::FixedTransfer& x) {
        x.set_direction(static_cast<v1::Direction>(-3));
      },
      [](v1::FixedTransfer& x) { x.set_name(std::string(300, 'n')); },
      [](v1::FixedTransfer& x) { x.clear_after_op(); },
      [](v1::FixedTransfer& x) { x.clear_release_op(); },
  };
  for (size_t i = 0; i < breakages.size(); ++i) {
    for (int f = 0; f < tiny.proto.fixed_transfers_size(); ++f) {
      SCOPED_TRACE(absl::StrCat("breakage ", i, " of transfer ", f));
      v1::Trace broken = tiny.proto;
      breakages[i](*broken.mutable_fixed_transfers(f));
      EXPECT_TRUE(ExpectAgreesWithProtobuf(broken.SerializeAsString()))
          << "left to protobuf";
    }
  }
  // A field FixedTransfer does not have yet is skipped, as protobuf keeps it
  // aside; a known field with another wire type is protobuf's.
  v1::Trace newer = tiny.proto;
  newer.mutable_fixed_transfers(0)
      ->GetReflection()
      ->MutableUnknownFields(newer.mutable_fixed_transfers(0))
      ->AddVarint(9, 1);
  EXPECT_TRUE(ExpectAgreesWithProtobuf(newer.SerializeAsString()));
  v1::FixedTransfer fixed_size = tiny.proto.fixed_transfers(0);
  fixed_size.clear_after_op();
  std::string payload = fixed_size.SerializeAsString();
  payload = WithField(payload, 4, 5, std::string(4, '\0'));  // fixed32
  const std::string odd = WithField(
      bytes, 4, 2, std::string(1, static_cast<char>(payload.size())) + payload);
  EXPECT_FALSE(TraceFromWire(odd).has_value());
}

TEST(TraceWireTest, LeavesOtherEncodingsToProtobuf) {
  const google::protobuf::LogSilencer quiet;  // parse errors are expected
  testing::TinyProtoTrace tiny;
  const int f = tiny.Fwd(10);
  const int b = tiny.Bwd(10);
  tiny.Tensor(64, f, {b});
  const std::string bytes = tiny.proto.SerializeAsString();
  ASSERT_TRUE(TraceFromWire(bytes).has_value());

  v1::Tensor unpacked;  // use_ops written as a plain varint, not packed
  unpacked.set_size_bytes(8);
  std::string tensor = unpacked.SerializeAsString();
  tensor = WithField(tensor, 4, 0, std::string(1, static_cast<char>(b)));
  const std::string cases[] = {
      WithField(bytes, 9, 0, std::string(1, '\1')),  // unknown field
      WithField(bytes, 3, 2,
                std::string(1, static_cast<char>(tensor.size())) + tensor),
      WithField(bytes, 5, 3, "") + "\x2C",                 // a group
      bytes.substr(0, bytes.size() - 1),                   // truncated
      WithField(bytes, 1, 2, std::string("\x80\x00", 2)),  // padded length
  };
  for (const std::string& c : cases) {
    EXPECT_FALSE(TraceFromWire(c).has_value());
    ExpectAgreesWithProtobuf(c);
  }
  // Names in UTF-8 beyond ASCII are decoded.
  tiny.proto.set_name("Schrödinger's ∂ trace 🐈");
  EXPECT_TRUE(ExpectAgreesWithProtobuf(tiny.proto.SerializeAsString()));
}

// The runtime's fields (dtype, producer_output) are decoded past, not left to
// protobuf; a dtype that is not UTF-8 is protobuf's to reject.
TEST(TraceWireTest, SkipsTheRuntimeFieldsOfATensor) {
  const google::protobuf::LogSilencer quiet;
  testing::TinyProtoTrace tiny;
  const int f = tiny.Fwd(10);
  const int b = tiny.Bwd(10);
  tiny.Tensor(64, f, {b});
  tiny.proto.mutable_tensors(0)->set_dtype("float32");
  tiny.proto.mutable_tensors(0)->set_producer_output(3);
  EXPECT_TRUE(ExpectAgreesWithProtobuf(tiny.proto.SerializeAsString()));
  tiny.proto.mutable_tensors(0)->set_dtype("float\xff");
  std::string bytes;
  ASSERT_TRUE(tiny.proto.SerializePartialToString(&bytes));
  EXPECT_FALSE(TraceFromWire(bytes).has_value());
  ExpectAgreesWithProtobuf(bytes);
}

// Protobuf rejects a whole message whose string is not UTF-8, and logs an
// error for it (one log line per request in a server). The decoder answers
// instead, naming the field.
TEST(TraceWireTest, NamesThatAreNotUtf8AreRejectedWithTheirField) {
  const google::protobuf::LogSilencer quiet;  // protobuf's side logs
  testing::TinyProtoTrace tiny;
  const int f = tiny.Fwd(10);
  const int b = tiny.Bwd(10);
  tiny.Tensor(64, f, {b});
  tiny.Tensor(64, f, {b});
  struct Case {
    std::string bytes;
    std::string field;
  };
  const std::string invalid[] = {"\xC3\x28", "\xED\xA0\x80" /* surrogate */,
                                 "ok\xFF", "\xF4\x90\x80\x80" /* > U+10FFFF */};
  for (const std::string& name : invalid) {
    SCOPED_TRACE(absl::CEscape(name));
    std::vector<Case> cases;
    testing::TinyProtoTrace t = tiny;
    t.proto.set_name(name);
    cases.push_back({t.proto.SerializePartialAsString(), "trace.name"});
    t = tiny;
    t.proto.mutable_operators(1)->set_name(name);
    cases.push_back(
        {t.proto.SerializePartialAsString(), "trace.operators[1].name"});
    t = tiny;
    t.proto.mutable_tensors(1)->set_name(name);
    cases.push_back(
        {t.proto.SerializePartialAsString(), "trace.tensors[1].name"});
    t = tiny;
    t.Fixed(v1::DIRECTION_D2H, 1);
    t.proto.mutable_fixed_transfers(0)->set_name(name);
    cases.push_back(
        {t.proto.SerializePartialAsString(), "trace.fixed_transfers[0].name"});
    for (const Case& c : cases) {
      v1::Trace message;
      EXPECT_FALSE(message.ParseFromString(c.bytes));
      const std::optional<absl::StatusOr<Trace>> wire = TraceFromWire(c.bytes);
      ASSERT_TRUE(wire.has_value());
      ASSERT_FALSE(wire->ok());
      EXPECT_EQ(wire->status().code(), absl::StatusCode::kInvalidArgument);
      ASSERT_FALSE(FieldViolationsOf(wire->status()).empty());
      EXPECT_EQ(FieldViolationsOf(wire->status())[0].field, c.field);
      EXPECT_EQ(FieldViolationsOf(wire->status())[0].description,
                "not valid UTF-8");
    }
  }
}

TEST(TraceWireTest, RandomMutationsNeverDisagreeWithProtobuf) {
  const google::protobuf::LogSilencer quiet;  // parse errors are expected
  v1::Trace offloaded;  // with fixed transfers of every shape
  ASSERT_TRUE(offloaded.ParseFromString(Generated("gpt2-xl", 1)));
  const int last = offloaded.operators_size() - 1;
  for (int i = 0; i < 4; ++i) {
    v1::FixedTransfer* x = offloaded.add_fixed_transfers();
    x->set_name("offload");
    x->set_direction(i % 2 == 0 ? v1::DIRECTION_D2H : v1::DIRECTION_H2D);
    x->set_size_bytes(int64_t{1000} << (8 * i));
    if (i % 2 == 0) x->set_after_op(last - 2 + i / 2);
    if (i == 1 || i == 2) x->set_before_op(last - 1 + i / 2);
    if (i < 2) x->set_gpu_bytes(x->size_bytes());
    if (i == 1) x->set_release_op(last);
  }
  ASSERT_TRUE(TraceFromProto(offloaded).ok())
      << TraceFromProto(offloaded).status();
  const std::string seeds[] = {Generated("llama-7b", 1),
                               Generated("bert-large", 1),
                               offloaded.SerializeAsString()};
  std::mt19937 random(20261130);
  int answered = 0;
  int runs = 0;
  for (const std::string& seed : seeds) {
    for (int i = 0; i < 5000; ++i, ++runs) {
      std::string bytes = seed;
      const int edits = 1 + static_cast<int>(random() % 2);
      for (int e = 0; e < edits && !bytes.empty(); ++e) {
        const size_t at = random() % bytes.size();
        switch (random() % 5) {
          case 0:  // a byte changed
            bytes[at] = static_cast<char>(random());
            break;
          case 4:  // a byte changed, staying ASCII: names stay UTF-8
            bytes[at] = static_cast<char>(random() % 0x80);
            break;
          case 1:  // cut short
            bytes.resize(at);
            break;
          case 2:  // a slice repeated
            bytes.insert(at, bytes.substr(at, random() % 16));
            break;
          case 3:  // random bytes inserted
            bytes.insert(
                at, std::string(1 + random() % 3, static_cast<char>(random())));
        }
      }
      if (ExpectAgreesWithProtobuf(bytes)) ++answered;
    }
  }
  // Edits of a value keep the encoding: the decoder must answer for a good
  // share of the cases (about a tenth), or this test would exercise only the
  // fallback.
  EXPECT_GT(answered, runs / 20) << answered << " of " << runs;
}

TEST(SplitFieldTest, SplitsAMessageAroundOneField) {
  v1::Operator op;  // the message to split: field 1 is its name
  op.set_name("a name");
  op.set_duration_ns(7);
  op.set_flops(1 << 20);
  op.set_phase(v1::PHASE_BACKWARD);
  const std::string bytes = op.SerializeAsString();
  absl::string_view name;
  std::string rest;
  ASSERT_TRUE(SplitField(bytes, 1, name, rest));
  EXPECT_EQ(name, "a name");
  v1::Operator without;
  ASSERT_TRUE(without.ParseFromString(rest));
  v1::Operator expected = op;
  expected.clear_name();
  EXPECT_EQ(without.SerializeAsString(), expected.SerializeAsString());

  // Absent: empty, and the rest is everything.
  ASSERT_TRUE(SplitField(expected.SerializeAsString(), 1, name, rest));
  EXPECT_TRUE(name.empty());
  EXPECT_EQ(rest, expected.SerializeAsString());

  // Twice (protobuf would keep the last), a group, malformed: not split.
  EXPECT_FALSE(SplitField(bytes + bytes, 1, name, rest));
  EXPECT_FALSE(SplitField(bytes + "\x2B\x2C", 1, name, rest));
  EXPECT_FALSE(SplitField(bytes.substr(0, bytes.size() - 1), 1, name, rest));
  EXPECT_FALSE(SplitField(WithField(bytes, 1, 0, "\1"), 1, name, rest));
}

TEST(TraceWireTest, KnowsEveryFieldOfTheTraceMessages) {
  // A new field must be taught to trace_wire.cc: until then every trace that
  // sets it is parsed by protobuf instead (right, but at the old speed).
  EXPECT_EQ(v1::Trace::descriptor()->field_count(), 4);
  EXPECT_EQ(v1::Operator::descriptor()->field_count(), 8);
  EXPECT_EQ(v1::FixedTransfer::descriptor()->field_count(), 7);
  // dtype (9) and producer_output (10) are for runtimes: skipped.
  EXPECT_EQ(v1::Tensor::descriptor()->field_count(), 10);
  v1::Trace all;
  all.set_name("t");
  v1::Operator* f = all.add_operators();
  f->set_name("f");
  f->set_phase(v1::PHASE_FORWARD);
  f->set_kind(v1::OP_KIND_MATMUL);
  f->set_duration_ns(3);
  f->set_block_index(1);
  f->set_workspace_bytes(5);
  f->set_flops(7);
  f->set_memory_traffic_bytes(9);
  *all.add_operators() = *f;
  all.mutable_operators(1)->set_phase(v1::PHASE_BACKWARD);
  v1::Operator* r = all.add_operators();
  *r = *f;
  r->set_phase(v1::PHASE_BACKWARD);
  v1::Tensor* t = all.add_tensors();
  t->set_name("x");
  t->set_size_bytes(11);
  t->set_producer_op(0);
  t->add_use_ops(1);
  t->add_use_ops(2);
  t->set_recompute_duration_ns(13);
  t->set_swap_forbidden(true);
  t->set_recompute_forbidden(true);
  t->set_dtype("bfloat16");
  t->set_producer_output(-2);
  v1::Tensor* u = all.add_tensors();
  *u = *t;
  u->add_recompute_inputs(0);
  u->set_swap_forbidden(false);
  v1::FixedTransfer* x = all.add_fixed_transfers();
  x->set_name("param");
  x->set_direction(v1::DIRECTION_H2D);
  x->set_size_bytes(17);
  x->set_after_op(0);
  x->set_before_op(1);
  x->set_gpu_bytes(19);
  x->set_release_op(2);
  const std::string bytes = all.SerializeAsString();
  EXPECT_TRUE(ExpectAgreesWithProtobuf(bytes)) << "left to protobuf";
  EXPECT_TRUE(TraceFromWire(bytes)->ok()) << TraceFromWire(bytes)->status();
}

}  // namespace
}  // namespace slackswap
