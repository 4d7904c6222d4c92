// File: rpcs.h
//
// The PlannerService's RPCs, one row each (Rpc<M>): the method's name, its
// request and response messages, whether it plans, and the ServiceCore call
// it runs, in both forms (a message with its traces, as the CLI has it; a
// request whose traces were decoded from its bytes, as the server has it).
// The server's handlers, the CLI's in-process and remote backends, the
// metrics' labels and the call log all work from these rows, so a new RPC is
// its proto, its ServiceCore call and one row here (docs/architecture.md).
#ifndef SLACKSWAP_SERVICE_RPCS_H_
#define SLACKSWAP_SERVICE_RPCS_H_

#include <string>
#include <type_traits>

#include "absl/status/statusor.h"
#include "base/stop.h"
#include "service/method.h"
#include "service/service_core.h"
#include "slackswap/v1/service.pb.h"

namespace slackswap {

template <Method M>
struct Rpc;

template <>
struct Rpc<Method::kPlan> {
  using Request = v1::PlanRequest;
  using Response = v1::PlanResponse;
  static constexpr const char* kName = "Plan";
  static constexpr bool kPlans = true;  // its plans are counted in metrics
  template <typename In>
  static absl::StatusOr<Response> Run(const ServiceCore& core, const In& in,
                                      const StopFunction& stop) {
    return core.Plan(in, stop);
  }
};

template <>
struct Rpc<Method::kSimulate> {
  using Request = v1::SimulateRequest;
  using Response = v1::SimulateResponse;
  static constexpr const char* kName = "Simulate";
  static constexpr bool kPlans = false;
  template <typename In>
  static absl::StatusOr<Response> Run(const ServiceCore& core, const In& in,
                                      const StopFunction& stop) {
    return core.Simulate(in, stop);
  }
};

template <>
struct Rpc<Method::kCompare> {
  using Request = v1::CompareRequest;
  using Response = v1::CompareResponse;
  static constexpr const char* kName = "Compare";
  static constexpr bool kPlans = true;
  template <typename In>
  static absl::StatusOr<Response> Run(const ServiceCore& core, const In& in,
                                      const StopFunction& stop) {
    return core.Compare(in, stop);
  }
};

template <>
struct Rpc<Method::kFrontier> {
  using Request = v1::FrontierRequest;
  using Response = v1::FrontierResponse;
  static constexpr const char* kName = "Frontier";
  static constexpr bool kPlans = true;
  template <typename In>
  static absl::StatusOr<Response> Run(const ServiceCore& core, const In& in,
                                      const StopFunction& stop) {
    return core.Frontier(in, stop);
  }
};

template <>
struct Rpc<Method::kPlanNode> {
  using Request = v1::PlanNodeRequest;
  using Response = v1::PlanNodeResponse;
  static constexpr const char* kName = "PlanNode";
  static constexpr bool kPlans = true;
  template <typename In>
  static absl::StatusOr<Response> Run(const ServiceCore& core, const In& in,
                                      const StopFunction& stop) {
    return core.PlanNode(in, stop);
  }
};

template <>
struct Rpc<Method::kGenerateTrace> {
  using Request = v1::GenerateTraceRequest;
  using Response = v1::GenerateTraceResponse;
  static constexpr const char* kName = "GenerateTrace";
  static constexpr bool kPlans = false;
  template <typename In>
  static absl::StatusOr<Response> Run(const ServiceCore& core, const In& in,
                                      const StopFunction& stop) {
    return core.GenerateTrace(in, stop);
  }
};

template <Method M>
using MethodConstant = std::integral_constant<Method, M>;

// f(MethodConstant<method>()): one branch per row, so that `f` can use the
// row's types. Every branch must return the same type.
template <typename F>
decltype(auto) VisitMethod(Method method, F&& f) {
  switch (method) {
    case Method::kPlan:
      return f(MethodConstant<Method::kPlan>());
    case Method::kSimulate:
      return f(MethodConstant<Method::kSimulate>());
    case Method::kCompare:
      return f(MethodConstant<Method::kCompare>());
    case Method::kFrontier:
      return f(MethodConstant<Method::kFrontier>());
    case Method::kPlanNode:
      return f(MethodConstant<Method::kPlanNode>());
    case Method::kGenerateTrace:
      break;
  }
  return f(MethodConstant<Method::kGenerateTrace>());
}

// "Plan", "Simulate", ...: the rpc's name in the proto, and the grpc_method
// label of the metrics.
const char* MethodName(Method method);
// Whether the method's calls plan (and count their plans in the metrics).
bool MethodPlans(Method method);
// "/slackswap.v1.PlannerService/Plan": the path gRPC calls it by.
const std::string& MethodPath(Method method);

}  // namespace slackswap

#endif  // SLACKSWAP_SERVICE_RPCS_H_
