// File: stop.h
//
// Stopping long work when its caller no longer wants it (the call's deadline
// passed, the client cancelled, the server ran out of drain time).
//
// A StopFunction is asked from inside the work; true stops it, and once true
// it stays true. Planners take one in their options and poll it between
// steps. Replays are polled from inside (simulator/replay.h), so that one
// long replay (many skewed ranks, a node of jobs) stops too: they poll the
// function the thread runs under, set by a ScopedStop around the call.
//
//   const StopFunction should_stop = [&] { return context->IsCancelled(); };
//   ScopedStop scope(&should_stop);
//   ... every replay on this thread now polls should_stop ...
//
// A thread the work starts (a search's evaluators) runs under no function
// until it opens a ScopedStop with CurrentStop() of the thread that started
// it.
#ifndef SLACKSWAP_BASE_STOP_H_
#define SLACKSWAP_BASE_STOP_H_

#include <functional>

namespace slackswap {

// An empty function never stops.
using StopFunction = std::function<bool()>;

// While alive, CurrentStop() on this thread is `stop` (null: none); the
// previous one comes back when it ends. `*stop` must outlive the scope and be
// safe to call from every thread that opens a scope with it.
class ScopedStop {
 public:
  explicit ScopedStop(const StopFunction* stop);
  ~ScopedStop();
  ScopedStop(const ScopedStop&) = delete;
  ScopedStop& operator=(const ScopedStop&) = delete;

 private:
  const StopFunction* previous_;
};

// The innermost ScopedStop's function on this thread, or null.
const StopFunction* CurrentStop();

// True when the thread's function says stop.
bool StopRequested();

}  // namespace slackswap

#endif  // SLACKSWAP_BASE_STOP_H_
