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
  // Becomes the tree of `values`, in O(n), reusing its memory.
  void Assign(absl::Span<const int64_t> values);

  int size() const { return n_; }
  // Adds `delta` to every value in [lo, hi). Empty ranges are ignored.
  void Add(int lo, int hi, int64_t delta);
  // The maximum over [lo, hi) and its leftmost position; {kNegativeInfinity,
  // -1} for an empty range.
  std::pair<int64_t, int> Max(int lo, int hi) const;
  std::pair<int64_t, int> Max() const { return Max(0, n_); }
  int64_t Get(int i) const { return Max(i, i + 1).first; }

 private:
  struct Node {
    int64_t max;
    int32_t arg;
  };
  Node At(size_t p) const { return {max_[p], arg_[p]}; }
  // Stores node p's maximum and position from its children's (ties go
  // left), and returns them. (Selects, not branches: which child wins
  // follows no pattern.)
  Node Combine(size_t p, Node left, Node right) {
    const bool go_right = right.max > left.max;
    const Node node{(go_right ? right.max : left.max) + add_[p],
                    go_right ? right.arg : left.arg};
    max_[p] = node.max;
    arg_[p] = node.arg;
    return node;
  }
  Node Pull(size_t p) { return Combine(p, At(2 * p), At(2 * p + 1)); }
  // Pull(p) where its child c is known to be `at_c` (just pulled). The
  // sibling wins if larger, or equal and on the left (c odd): s + 1 > c is
  // s >= c, the values being far from overflow.
  Node PullFrom(size_t p, size_t c, Node at_c) {
    const Node sibling = At(c ^ 1);
    const bool take_sibling =
        sibling.max + static_cast<int64_t>(c & 1) > at_c.max;
    const Node node{
        Select(take_sibling, sibling.max, at_c.max) + add_[p],
        static_cast<int32_t>(Select(take_sibling, sibling.arg, at_c.arg))};
    max_[p] = node.max;
    arg_[p] = node.arg;
    return node;
  }
  // `take_a ? a : b` by masks: compilers turn the plain form into a branch,
  // which mispredicts here half the time.
  static int64_t Select(bool take_a, int64_t a, int64_t b) {
    const int64_t mask = -static_cast<int64_t>(take_a);
    return (a & mask) | (b & ~mask);
  }
  void BuildInternal();

  int n_ = 0;
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
