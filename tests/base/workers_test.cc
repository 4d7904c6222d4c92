// The worker team the searches replay candidates on (base/workers.h).
#include "base/workers.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
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

// The caller waits for the team's last item, whether that ends while the
// caller still checks for it or after it has gone to sleep (then the team
// thread wakes it), loop after loop.
TEST(WorkersTest, TheCallerReturnsOnlyOnceTheTeamsItemsHaveEnded) {
  Workers workers(2);
  const std::thread::id caller = std::this_thread::get_id();
  for (int loop = 0; loop < 6; ++loop) {
    // Long enough for the caller to sleep on odd loops, none on even ones.
    const auto team_takes = std::chrono::milliseconds(loop % 2 == 1 ? 50 : 0);
    std::atomic<int> arrived{0};
    std::atomic<bool> team_done{false};
    workers.ForEach(2, [&](size_t) {
      // (Each thread takes one item: both wait until two have started.)
      arrived.fetch_add(1);
      while (arrived.load() < 2) std::this_thread::yield();
      if (std::this_thread::get_id() == caller) return;
      std::this_thread::sleep_for(team_takes);
      team_done.store(true);
    });
    EXPECT_TRUE(team_done.load()) << "loop " << loop;
  }
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

// A scan in order judges every candidate as prepared against the state the
// candidates before it left, on any number of threads: the same verdicts,
// states and end as one thread preparing and judging each in turn.
TEST(WorkersTest, AScanInOrderJudgesAsOneThreadWould) {
  // The state is a number; candidate i prepared against state s is a mix of
  // both; a candidate divisible by 5 becomes the state, and the scan stops
  // at the first state divisible by 97 (or a candidate that says stop).
  const auto mix = [](uint64_t s, size_t i) {
    uint64_t x = s * 0x9E3779B97F4A7C15ULL + i * 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 29;
    return x % 1000;
  };
  struct Step {
    size_t i;
    uint64_t value, state;
    bool operator==(const Step& o) const {
      return i == o.i && value == o.value && state == o.state;
    }
  };
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{500}}) {
    // One thread, one candidate at a time: the reference.
    std::vector<Step> expected;
    uint64_t state = 1;
    size_t end = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t value = mix(state, i);
      end = i + 1;
      if (value % 5 == 0) state = value;
      expected.push_back({i, value, state});
      if (value == 999 || state % 97 == 0) break;
    }
    for (int threads : {0, 1, 2, 4}) {
      std::optional<Workers> workers;
      if (threads > 0) workers.emplace(threads);
      Workers* team = threads > 0 ? &*workers : nullptr;
      std::vector<uint64_t> slots(MaxScanBatch(team));
      std::vector<uint64_t> prepared_against(slots.size());
      std::atomic<int> prepared{0};
      std::vector<Step> steps;
      uint64_t now = 1;
      const size_t last = ScanInOrder(
          team, n,
          [&](size_t slot, size_t i) {
            slots[slot] = mix(now, i);
            prepared_against[slot] = now;
            prepared.fetch_add(1);
          },
          [&](size_t slot, size_t i) {
            // Never a candidate prepared against a state since changed.
            EXPECT_EQ(prepared_against[slot], now) << "candidate " << i;
            const uint64_t value = slots[slot];
            const bool changes = value % 5 == 0;
            if (changes) now = value;
            steps.push_back({i, value, now});
            if (value == 999 || now % 97 == 0) return ScanVerdict::kStop;
            return changes ? ScanVerdict::kChanged : ScanVerdict::kNext;
          });
      EXPECT_EQ(steps, expected) << threads << " threads, n " << n;
      EXPECT_EQ(last, end) << threads << " threads, n " << n;
      // One thread prepares nothing ahead of its turn.
      if (threads <= 1) {
        EXPECT_EQ(prepared.load(), static_cast<int>(steps.size()));
      }
    }
  }
}

// `batch` runs before each batch, on the calling thread, and ends the scan
// when it says false; batches grow while nothing changes.
TEST(WorkersTest, AScanInOrderEndsWhereItsBatchCheckSaysSo) {
  Workers workers(2);
  EXPECT_EQ(MaxScanBatch(&workers), 16u);
  EXPECT_EQ(MaxScanBatch(nullptr), 1u);
  std::vector<size_t> batch_starts;
  size_t judged = 0;
  const size_t last = ScanInOrder(
      &workers, 1000, [](size_t, size_t) {},
      [&](size_t, size_t) {
        ++judged;
        return ScanVerdict::kNext;
      },
      [&] {
        batch_starts.push_back(judged);
        return batch_starts.size() <= 5;
      });
  // Batches of 2, 4, 8, 16 and 16 candidates, then the check said stop.
  EXPECT_EQ(batch_starts, (std::vector<size_t>{0, 2, 6, 14, 30, 46}));
  EXPECT_EQ(last, 46u);
  EXPECT_EQ(judged, 46u);
}

}  // namespace
}  // namespace slackswap
