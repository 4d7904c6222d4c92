// File: segment_tree.h
//
// A segment tree over n int64 values with range addition and range maximum
// (with the leftmost position of the maximum). Every operation is O(log n),
// iterative; the tree holds 2m values and 2m positions for the power of two
// m >= n. Used by the event model for the projected memory that admits a
// prefetch (replay.h), and by the planners for memory profiles (resident
// bytes per operator) and link slack.
#ifndef SLACKSWAP_SIMULATOR_SEGMENT_TREE_H_
#define SLACKSWAP_SIMULATOR_SEGMENT_TREE_H_

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "absl/types/span.h"

namespace slackswap {

class MaxSegmentTree {
 public:
  static constexpr int64_t kNegativeInfinity =
      std::numeric_limits<int64_t>::min() / 4;

  // n values, all `initial`.
  explicit MaxSegmentTree(int n, int64_t initial = 0);
  // The values given, in O(n).
  explicit MaxSegmentTree(absl::Span<const int64_t> values);

  int size() const { return n_; }
  // Adds `delta` to every value in [lo, hi). Empty ranges are ignored.
  void Add(int lo, int hi, int64_t delta);
  // The maximum over [lo, hi) and its leftmost position; {kNegativeInfinity,
  // -1} for an empty range.
  std::pair<int64_t, int> Max(int lo, int hi) const;
  std::pair<int64_t, int> Max() const { return Max(0, n_); }
  int64_t Get(int i) const { return Max(i, i + 1).first; }

 private:
  // Node p's maximum and position from its children (ties go left).
  void Pull(size_t p) {
    const int64_t left = max_[2 * p], right = max_[2 * p + 1];
    const bool go_right = right > left;  // (selects, not branches)
    max_[p] = (go_right ? right : left) + add_[p];
    arg_[p] = arg_[2 * p + (go_right ? 1 : 0)];
  }
  void BuildInternal();

  int n_;
  size_t leaves_ = 1;  // m: leaf i is node m + i; node 1 is the root
  // Per node: the maximum of its subtree with every addition made to a
  // range covering the node or part of it, but not those pending at its
  // ancestors; the addition pending for its whole subtree (internal nodes);
  // the leftmost position of its maximum.
  std::vector<int64_t> max_;
  std::vector<int64_t> add_;
  std::vector<int32_t> arg_;
};

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_SEGMENT_TREE_H_
