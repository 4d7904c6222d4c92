// File: segment_tree.h
//
// A segment tree over n int64 values with lazy range addition and range
// maximum (with the leftmost position of the maximum). Every operation is
// O(log n); the tree holds 4n values. Used by the planners for memory profiles
// (resident bytes per operator) and link slack.
#ifndef SLACKSWAP_PLANNER_SEGMENT_TREE_H_
#define SLACKSWAP_PLANNER_SEGMENT_TREE_H_

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace slackswap {

class MaxSegmentTree {
 public:
  static constexpr int64_t kNegativeInfinity =
      std::numeric_limits<int64_t>::min() / 4;

  // n values, all `initial`.
  explicit MaxSegmentTree(int n, int64_t initial = 0);

  int size() const { return n_; }
  // Adds `delta` to every value in [lo, hi). Empty ranges are ignored.
  void Add(int lo, int hi, int64_t delta);
  // The maximum over [lo, hi) and its leftmost position; {kNegativeInfinity,
  // -1} for an empty range.
  std::pair<int64_t, int> Max(int lo, int hi) const;
  std::pair<int64_t, int> Max() const { return Max(0, n_); }
  int64_t Get(int i) const { return Max(i, i + 1).first; }

 private:
  void Build(int node, int lo, int hi, int64_t initial);
  void Add(int node, int lo, int hi, int qlo, int qhi, int64_t delta);
  std::pair<int64_t, int> Max(int node, int lo, int hi, int qlo, int qhi) const;

  int n_;
  std::vector<int64_t>
      max_;  // max of the subtree, including its own pending add
  std::vector<int64_t> add_;  // addition pending for the whole subtree
  std::vector<int32_t>
      arg_;  // leftmost position of the max (without ancestors' adds)
};

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_SEGMENT_TREE_H_
