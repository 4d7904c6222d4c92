// The worker team the searches replay candidates on (base/workers.h).
#include "base/workers.h"

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace slackswap {
namespace {

// Every index runs exactly once per loop, loop after loop, whatever the
// sizes (none, one, fewer than the threads, many).
TEST(WorkersTest, EachLoopRunsEveryIndexOnce) {
  for (int threads : {1, 2, 4}) {
    Workers workers(threads);
    EXPECT_EQ(workers.threads(), threads);
    for (size_t n : {size_t{0}, size_t{1}, size_t{3}, size_t{1000}}) {
      for (int loop = 0; loop < 50; ++loop) {
        std::vector<std::atomic<int>> runs(n);
        workers.ForEach(n, [&](size_t i) { runs[i].fetch_add(1); });
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(runs[i].load(), 1)
              << threads << " threads, n " << n << ", index " << i;
        }
      }
    }
  }
}

// The team shares the work: with two threads and bodies that wait for each
// other, a loop finishes only if two run at once.
TEST(WorkersTest, TwoThreadsRunBodiesAtTheSameTime) {
  Workers workers(2);
  std::atomic<int> arrived{0};
  std::set<std::thread::id> ran_on;
  std::mutex mu;
  workers.ForEach(2, [&](size_t) {
    arrived.fetch_add(1);
    while (arrived.load() < 2) std::this_thread::yield();
    std::lock_guard<std::mutex> lock(mu);
    ran_on.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(ran_on.size(), 2u);
}

// The team runs under the caller's stop function (base/stop.h), loop by loop.
TEST(WorkersTest, BodiesRunUnderTheCallersStopFunction) {
  Workers workers(3);
  for (bool stop_now : {true, false, true}) {
    const StopFunction stop = [stop_now] { return stop_now; };
    ScopedStop scope(&stop);
    std::vector<std::atomic<int>> seen(64);
    workers.ForEach(seen.size(),
                    [&](size_t i) { seen[i].store(StopRequested() ? 1 : 2); });
    for (const auto& s : seen) EXPECT_EQ(s.load(), stop_now ? 1 : 2);
  }
  std::atomic<int> without{0};
  workers.ForEach(64, [&](size_t) { without += StopRequested() ? 1 : 0; });
  EXPECT_EQ(without.load(), 0);
}

}  // namespace
}  // namespace slackswap
