#include "service/rpcs.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "slackswap/v1/service.grpc.pb.h"

namespace slackswap {

const char* MethodName(Method method) {
  return VisitMethod(method,
                     [](auto m) { return Rpc<decltype(m)::value>::kName; });
}

bool MethodPlans(Method method) {
  return VisitMethod(method,
                     [](auto m) { return Rpc<decltype(m)::value>::kPlans; });
}

const std::string& MethodPath(Method method) {
  static const auto* paths = [] {
    auto* out = new std::array<std::string, kNumMethods>;
    for (int m = 0; m < kNumMethods; ++m) {
      (*out)[m] = absl::StrCat("/", v1::PlannerService::service_full_name(),
                               "/", MethodName(static_cast<Method>(m)));
    }
    return out;
  }();
  return (*paths)[static_cast<int>(method)];
}

}  // namespace slackswap
