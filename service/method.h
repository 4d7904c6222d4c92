// File: method.h
//
// The PlannerService's RPCs by name, for what is kept per method (metrics,
// the call log, the plans a call made). Each value's row, with its messages
// and the ServiceCore call it runs, is Rpc<> in service/rpcs.h.
#ifndef SLACKSWAP_SERVICE_METHOD_H_
#define SLACKSWAP_SERVICE_METHOD_H_

namespace slackswap {

enum class Method {
  kPlan,
  kSimulate,
  kCompare,
  kFrontier,
  kPlanNode,
  kGenerateTrace,
};
// How many there are: the service's rpcs (a test checks both against the
// proto), the length of arrays indexed by method.
inline constexpr int kNumMethods = 6;

}  // namespace slackswap

#endif  // SLACKSWAP_SERVICE_METHOD_H_
