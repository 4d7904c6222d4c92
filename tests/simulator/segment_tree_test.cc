// MaxSegmentTree against a plain array, on random range additions and range
// maxima.
#include "simulator/segment_tree.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace slackswap {
namespace {

std::pair<int64_t, int> BruteMax(const std::vector<int64_t>& v, int lo,
                                 int hi) {
  std::pair<int64_t, int> best = {MaxSegmentTree::kNegativeInfinity, -1};
  for (int i = lo; i < hi; ++i) {
    if (best.second < 0 || v[i] > best.first) best = {v[i], i};
  }
  return best;
}

TEST(MaxSegmentTreeTest, MatchesAnArrayOnRandomOperations) {
  std::mt19937_64 random(42);
  for (int n : {1, 2, 3, 7, 64, 100, 129}) {
    SCOPED_TRACE(n);
    const int64_t initial = static_cast<int64_t>(random() % 9) - 4;
    MaxSegmentTree tree(n, initial);
    std::vector<int64_t> values(n, initial);
    ASSERT_EQ(tree.size(), n);
    for (int step = 0; step < 2000; ++step) {
      int lo = static_cast<int>(random() % (n + 1));
      int hi = static_cast<int>(random() % (n + 1));
      if (lo > hi) std::swap(lo, hi);
      if (random() % 2) {
        // Small deltas make ties, which must resolve to the leftmost.
        const int64_t delta = static_cast<int64_t>(random() % 7) - 3;
        tree.Add(lo, hi, delta);
        for (int i = lo; i < hi; ++i) values[i] += delta;
      } else {
        ASSERT_EQ(tree.Max(lo, hi), BruteMax(values, lo, hi))
            << "[" << lo << ", " << hi << ") step " << step;
      }
    }
    EXPECT_EQ(tree.Max(), BruteMax(values, 0, n));
    for (int i = 0; i < n; ++i) EXPECT_EQ(tree.Get(i), values[i]);
  }
}

TEST(MaxSegmentTreeTest, BuiltFromValuesMatchesAnArray) {
  std::mt19937_64 random(7);
  for (int n : {0, 1, 5, 33, 128, 200}) {
    SCOPED_TRACE(n);
    std::vector<int64_t> values(n);
    for (int64_t& v : values) v = static_cast<int64_t>(random() % 5);
    MaxSegmentTree tree(values);
    ASSERT_EQ(tree.size(), n);
    for (int step = 0; step < 500; ++step) {
      int lo = static_cast<int>(random() % (n + 1));
      int hi = static_cast<int>(random() % (n + 1));
      if (lo > hi) std::swap(lo, hi);
      if (step % 3 == 0) {
        const int64_t delta = static_cast<int64_t>(random() % 5) - 2;
        tree.Add(lo, hi, delta);
        for (int i = lo; i < hi; ++i) values[i] += delta;
      }
      ASSERT_EQ(tree.Max(lo, hi), BruteMax(values, lo, hi))
          << "[" << lo << ", " << hi << ") step " << step;
    }
  }
}

TEST(MaxSegmentTreeTest, EmptyRangesAndLargeValues) {
  MaxSegmentTree tree(5, 0);
  tree.Add(3, 3, 100);  // empty: ignored
  tree.Add(4, 2, 100);  // reversed: empty too
  EXPECT_EQ(tree.Max(), std::make_pair(int64_t{0}, 0));
  EXPECT_EQ(tree.Max(2, 2),
            std::make_pair(MaxSegmentTree::kNegativeInfinity, -1));
  // Byte counts of real traces: sums far past 32 bits.
  tree.Add(1, 4, int64_t{1} << 50);
  tree.Add(2, 5, int64_t{1} << 50);
  EXPECT_EQ(tree.Max(), std::make_pair(int64_t{1} << 51, 2));
  tree.Add(0, 5, -(int64_t{1} << 52));
  EXPECT_EQ(tree.Max().first, (int64_t{1} << 51) - (int64_t{1} << 52));
}

}  // namespace
}  // namespace slackswap
