// The tables that stand for lists: the policy table (planner/policies.h) and
// what is derived from it (every row has its proto value and every proto
// value its row, names round-trip, each row runs and estimates its cost,
// docs/planner.md's table lists the same rows with the same words); and the
// RPC rows (service/rpcs.h): one per rpc of the proto's service, in its
// order, each answering through ServiceCore in both of its forms.
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "planner/policies.h"
#include "service/rpcs.h"
#include "service/service_core.h"
#include "service/trace_convert.h"
#include "service/wire_convert.h"
#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/trace_validation.h"
#include "simulator/workload.h"
#include "slackswap/v1/planning.pb.h"
#include "slackswap/v1/service.grpc.pb.h"

namespace slackswap {
namespace {

TEST(PolicyTableTest, EveryRowHasItsProtoValueAndBack) {
  ASSERT_EQ(static_cast<int>(PolicyTable().size()), kNumPolicies);
  for (const PolicyInfo& row : PolicyTable()) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(&InfoOf(row.policy), &row);
    const v1::Policy proto = PolicyToProto(row.policy);
    ASSERT_NE(proto, v1::POLICY_UNSPECIFIED);
    std::string expected = absl::StrCat("POLICY_", row.name);
    for (char& c : expected) c = c == '-' ? '_' : static_cast<char>(toupper(c));
    EXPECT_EQ(v1::Policy_Name(proto), expected);
    const absl::StatusOr<Policy> back = PolicyFromProto(proto, "policy");
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, row.policy);
    const absl::StatusOr<Policy> named = PolicyFromName(row.name);
    ASSERT_TRUE(named.ok());
    EXPECT_EQ(*named, row.policy);
  }
  const google::protobuf::EnumDescriptor* values = v1::Policy_descriptor();
  for (int i = 0; i < values->value_count(); ++i) {
    const auto value = static_cast<v1::Policy>(values->value(i)->number());
    if (value == v1::POLICY_UNSPECIFIED) {
      EXPECT_FALSE(PolicyFromProto(value, "policy").ok());
      continue;
    }
    EXPECT_TRUE(PolicyFromProto(value, "policy").ok())
        << values->value(i)->name() << " has no row in PolicyTable()";
  }
}

TEST(PolicyTableTest, EveryRowRunsAndEstimatesItsReplays) {
  WorkloadSpec spec = *WorkloadPreset("gpt2-xl");
  spec.layers = 1;
  const Hardware hardware = *HardwarePreset("a100");
  const absl::StatusOr<TraceSpec> generated = GenerateTrace(spec, hardware);
  ASSERT_TRUE(generated.ok()) << generated.status();
  const Trace trace = *ValidateTrace(*generated);
  PolicyOptions options;
  options.genetic_search.max_evaluations = 50;
  options.swapadvisor.max_evaluations = 50;
  int baselines = 0;
  for (const PolicyInfo& row : PolicyTable()) {
    SCOPED_TRACE(row.name);
    EXPECT_GT(row.max_replays(trace, options), 0);
    EXPECT_FALSE(std::string(row.summary).empty());
    baselines += row.baseline ? 1 : 0;
    if (row.policy == Policy::kOptimum) continue;  // too many tensors for it
    const absl::StatusOr<PlanningResult> result = RunPolicy(
        row.policy, trace, hardware, AllKeepPeakBytes(trace), options);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_TRUE(result->feasible);
  }
  EXPECT_EQ(baselines, 4);
  EXPECT_EQ(BaselinePolicies().size(), 4u);
}

TEST(PolicyTableTest, TheDocsListTheSameRows) {
  std::ifstream file(SLACKSWAP_SOURCE_DIR "/docs/planner.md");
  ASSERT_TRUE(file.good());
  std::stringstream text;
  text << file.rdbuf();
  const std::string doc = text.str();
  const size_t start = doc.find("| Policy | What it is |");
  ASSERT_NE(start, std::string::npos);
  std::vector<std::string> rows;
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(doc).substr(start), '\n')) {
    if (!absl::StartsWith(line, "| `")) {
      if (!rows.empty()) break;
      continue;
    }
    rows.emplace_back(line);
  }
  ASSERT_EQ(rows.size(), PolicyTable().size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const PolicyInfo& row = PolicyTable()[i];
    EXPECT_EQ(rows[i],
              absl::StrCat("| `", row.name, "` | ", row.summary, " |"));
  }
}

TEST(RpcTableTest, OneRowPerRpcOfTheService) {
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          v1::PlannerService::service_full_name());
  ASSERT_NE(service, nullptr);
  ASSERT_EQ(service->method_count(), kNumMethods);
  for (int m = 0; m < kNumMethods; ++m) {
    const Method method = static_cast<Method>(m);
    const google::protobuf::MethodDescriptor* rpc =
        service->FindMethodByName(MethodName(method));
    ASSERT_NE(rpc, nullptr) << MethodName(method);
    EXPECT_EQ(MethodPath(method),
              absl::StrCat("/", service->full_name(), "/", rpc->name()));
    VisitMethod(method, [&](auto row) {
      using Row = Rpc<decltype(row)::value>;
      EXPECT_EQ(rpc->input_type(), Row::Request::descriptor());
      EXPECT_EQ(rpc->output_type(), Row::Response::descriptor());
      EXPECT_STREQ(Row::kName, MethodName(decltype(row)::value));
      return 0;
    });
  }
  int planning = 0;
  for (int m = 0; m < kNumMethods; ++m)
    planning += MethodPlans(static_cast<Method>(m)) ? 1 : 0;
  EXPECT_EQ(planning, 4);  // Plan, Compare, Frontier, PlanNode
}

TEST(RpcTableTest, BothFormsOfACallAnswerAlike) {
  // A Plan request as a message, and the same request with its trace
  // decoded beside a message without it: the same response, but for the
  // planning time.
  const ServiceCore core;
  v1::GenerateTraceRequest generate;
  generate.set_workload_preset("gpt2-xl");
  generate.set_hardware_preset("a100");
  generate.set_layers(1);
  const absl::StatusOr<v1::GenerateTraceResponse> generated =
      Rpc<Method::kGenerateTrace>::Run(core, generate, nullptr);
  ASSERT_TRUE(generated.ok()) << generated.status();
  v1::PlanRequest request;
  *request.mutable_trace() = generated->trace();
  *request.mutable_hardware() = generated->hardware();
  request.mutable_budget()->set_fraction_of_peak(0.5);
  const absl::StatusOr<Trace> trace = TraceFromProto(request.trace());
  ASSERT_TRUE(trace.ok()) << trace.status();
  v1::PlanRequest without = request;
  without.clear_trace();
  absl::StatusOr<v1::PlanResponse> whole =
      Rpc<Method::kPlan>::Run(core, request, nullptr);
  absl::StatusOr<v1::PlanResponse> decoded = Rpc<Method::kPlan>::Run(
      core, Decoded<v1::PlanRequest>{without, &*trace}, nullptr);
  ASSERT_TRUE(whole.ok()) << whole.status();
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  whole->clear_planning_time_ns();
  decoded->clear_planning_time_ns();
  EXPECT_EQ(whole->SerializeAsString(), decoded->SerializeAsString());
  // A Decoded request without its decoded trace is a caller's bug.
  EXPECT_EQ(
      Rpc<Method::kPlan>::Run(core, Decoded<v1::PlanRequest>{without}, nullptr)
          .status()
          .code(),
      absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace slackswap
