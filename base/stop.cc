#include "base/stop.h"

namespace slackswap {
namespace {

thread_local const StopFunction* current_stop = nullptr;

}  // namespace

ScopedStop::ScopedStop(const StopFunction* stop) : previous_(current_stop) {
  current_stop = stop;
}

ScopedStop::~ScopedStop() { current_stop = previous_; }

const StopFunction* CurrentStop() { return current_stop; }

bool StopRequested() {
  const StopFunction* stop = current_stop;
  return stop != nullptr && *stop && (*stop)();
}

}  // namespace slackswap
