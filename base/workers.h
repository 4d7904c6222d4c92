// File: workers.h
//
// A fixed team of threads that runs one loop body over indices at a time:
// the searches (planner/anytime.h) replay their candidates on it. The
// threads start once and wait between loops, so a loop of a few replays
// (tens of microseconds each) pays a wake-up, not a thread start.
//
// Each index runs once, on some thread; which one depends on timing, so a
// body must write only to its own index's slot: the caller then reads the
// results in index order, and the outcome does not depend on the threads.
// The workers run under the caller's stop function (stop.h).
//
// ScanInOrder runs a scan whose every step may change what the next is
// judged against (a local search's plan) on the team as one thread would run
// it, preparing the next few candidates ahead in parallel.
//
// Example:
//   Workers workers(2);  // the caller and one more thread
//   workers.ForEach(candidates.size(), [&](size_t i) {
//     results[i] = Replay(candidates[i]);
//   });
#ifndef SLACKSWAP_BASE_WORKERS_H_
#define SLACKSWAP_BASE_WORKERS_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "base/stop.h"

namespace slackswap {

// What ScanInOrder's judge makes of a candidate.
enum class ScanVerdict {
  kNext,     // the state is as it was: go on with the next candidate
  kChanged,  // the state changed: the candidates after it are prepared again
  kStop,     // end the scan
};

class Workers {
 public:
  // `threads` in all, the calling thread included (at least 1: then ForEach
  // runs on the caller alone).
  explicit Workers(int threads);
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  int threads() const { return static_cast<int>(team_.size()) + 1; }

  // Calls body(i) for every i in [0, n), spread over the threads, the caller
  // among them; returns when every call has returned. One loop at a time:
  // not to be called from inside a body or from two threads at once.
  void ForEach(size_t n, const std::function<void(size_t)>& body);

 private:
  void Serve();
  // Takes indices of the current loop until none is left.
  void Drain();

  std::mutex mu_;
  std::condition_variable wake_;  // a new loop, or the end
  std::condition_variable done_;  // a team thread finished the loop
  // Loops started; a team thread joins every loop (ForEach waits for all of
  // them), so none can still be in one when the next begins.
  std::atomic<uint64_t> loop_{0};
  std::atomic<bool> ending_{false};
  std::atomic<int> finished_{0};  // team threads done with the current loop
  std::atomic<bool> sleeping_{false};  // the caller waits on done_
  // The current loop, set before loop_ advances.
  const std::function<void(size_t)>* body_ = nullptr;
  size_t size_ = 0;
  const StopFunction* stop_ = nullptr;
  std::atomic<size_t> next_{0};
  std::vector<std::thread> team_;
};

// Candidates 0..n-1 in order, each prepared against the state the candidates
// before it left, then judged, as one thread doing both would: the same
// verdicts, so the same outcome on any number of threads (`workers` may be
// null: the caller alone). prepare(slot, i) builds candidate i into the
// caller's `slot` (below MaxScanBatch(workers)) against the state as it is;
// it runs on any thread, a few candidates ahead of its turn, and so must only
// read the state. judge(slot, i) runs on the calling thread in index order.
// After a kChanged, the candidates prepared ahead against the old state are
// prepared again. Batches hold a candidate per thread at first and double
// (up to MaxScanBatch) while none changes the state; one thread prepares one
// at a time. `batch`, when given, runs on the calling thread before each
// batch; false ends the scan. Returns the index after the last candidate
// judged.
size_t MaxScanBatch(const Workers* workers);
size_t ScanInOrder(
    Workers* workers, size_t n,
    const std::function<void(size_t slot, size_t i)>& prepare,
    const std::function<ScanVerdict(size_t slot, size_t i)>& judge,
    const std::function<bool()>& batch = nullptr);

}  // namespace slackswap

#endif  // SLACKSWAP_BASE_WORKERS_H_
