// The caching allocator model on hand-worked sequences: rounding, the two
// pools and their segment sizes, best fit, splitting, merging within a
// segment and never across, and the reserved bytes they leave.
#include "simulator/caching_allocator.h"

#include "gtest/gtest.h"

namespace slackswap {
namespace {

constexpr int64_t KiB = 1024;
constexpr int64_t MiB = 1024 * KiB;

TEST(CachingAllocatorTest, RoundsRequestsAndSizesSegments) {
  using A = CachingAllocatorModel;
  EXPECT_EQ(A::RoundRequest(0), 512);
  EXPECT_EQ(A::RoundRequest(1), 512);
  EXPECT_EQ(A::RoundRequest(512), 512);
  EXPECT_EQ(A::RoundRequest(513), 1024);
  EXPECT_EQ(A::SegmentBytes(512), 2 * MiB);
  EXPECT_EQ(A::SegmentBytes(1 * MiB), 2 * MiB);  // still the small pool
  EXPECT_EQ(A::SegmentBytes(1 * MiB + 512), 20 * MiB);
  EXPECT_EQ(A::SegmentBytes(10 * MiB - 512), 20 * MiB);
  EXPECT_EQ(A::SegmentBytes(10 * MiB), 10 * MiB);
  EXPECT_EQ(A::SegmentBytes(11 * MiB + 1), 12 * MiB);
}

TEST(CachingAllocatorTest, SmallRequestsShareTwoMebibyteSegments) {
  CachingAllocatorModel a;
  a.Malloc(100);   // 512 bytes of a new 2 MiB segment
  a.Malloc(1000);  // 1 KiB from the rest of it
  EXPECT_EQ(a.allocated_bytes(), 1536);
  EXPECT_EQ(a.reserved_bytes(), 2 * MiB);
  EXPECT_EQ(a.segments(), 1);
  // 2 MiB - 1.5 KiB are left: a 1 MiB request fits there too.
  a.Malloc(1 * MiB);
  EXPECT_EQ(a.reserved_bytes(), 2 * MiB);
  // The next one does not: a second segment.
  a.Malloc(1 * MiB);
  EXPECT_EQ(a.reserved_bytes(), 4 * MiB);
  EXPECT_EQ(a.allocated_bytes(), 1536 + 2 * MiB);
}

TEST(CachingAllocatorTest, MidSizedRequestsSplitATwentyMebibyteSegment) {
  CachingAllocatorModel a;
  const int32_t x = a.Malloc(1536 * KiB);  // large pool: a 20 MiB segment
  EXPECT_EQ(a.reserved_bytes(), 20 * MiB);
  a.Malloc(5 * MiB);  // from the 18.5 MiB left
  EXPECT_EQ(a.reserved_bytes(), 20 * MiB);
  EXPECT_EQ(a.allocated_bytes(), 1536 * KiB + 5 * MiB);
  // Small and large pools never share: a small request gets its own segment.
  a.Malloc(4 * KiB);
  EXPECT_EQ(a.reserved_bytes(), 22 * MiB);
  a.Free(x);
  EXPECT_EQ(a.allocated_bytes(), 5 * MiB + 4 * KiB);
  EXPECT_EQ(a.reserved_bytes(), 22 * MiB);  // cached, not released
}

TEST(CachingAllocatorTest, ALargeBlockIsNotSplitForALittle) {
  CachingAllocatorModel a;
  const int32_t x = a.Malloc(12 * MiB);  // its own 12 MiB segment
  EXPECT_EQ(a.reserved_bytes(), 12 * MiB);
  a.Free(x);
  // 11 MiB takes the cached 12 MiB block whole: 1 MiB left is not more
  // than 1 MiB, so no split, and the whole block counts as allocated.
  a.Malloc(11 * MiB);
  EXPECT_EQ(a.reserved_bytes(), 12 * MiB);
  EXPECT_EQ(a.allocated_bytes(), 12 * MiB);
}

TEST(CachingAllocatorTest, AHoleTooSmallForcesANewSegment) {
  CachingAllocatorModel a;
  const int32_t x = a.Malloc(6 * MiB);
  const int32_t y = a.Malloc(6 * MiB);
  a.Malloc(6 * MiB);  // one 20 MiB segment: 6 | 6 | 6 | 2 free
  a.Free(y);          // a 6 MiB hole
  a.Malloc(7 * MiB);  // fits neither the hole nor the tail: a new segment
  EXPECT_EQ(a.segments(), 2);
  EXPECT_EQ(a.reserved_bytes(), 40 * MiB);
  EXPECT_EQ(a.allocated_bytes(), 19 * MiB);
  EXPECT_EQ(a.peak_reserved_bytes(), 40 * MiB);
  EXPECT_EQ(a.peak_allocated_bytes(), 19 * MiB);
  // Freeing x merges it with the hole beside it: 12 MiB, where 10 MiB fits.
  a.Free(x);
  a.Malloc(10 * MiB);
  EXPECT_EQ(a.reserved_bytes(), 40 * MiB);
}

TEST(CachingAllocatorTest, BlocksNeverMergeAcrossSegments) {
  CachingAllocatorModel a;
  const int32_t x = a.Malloc(12 * MiB);  // segment 0, whole
  const int32_t y = a.Malloc(12 * MiB);  // segment 1, whole
  a.Free(x);
  a.Free(y);
  // 24 MiB are cached, but in two blocks of 12: 14 MiB needs a third.
  a.Malloc(14 * MiB);
  EXPECT_EQ(a.segments(), 3);
  EXPECT_EQ(a.reserved_bytes(), 38 * MiB);
}

TEST(CachingAllocatorTest, BestFitPrefersTheSmallestBlockThatFits) {
  CachingAllocatorModel a;
  const int32_t big = a.Malloc(16 * MiB);
  const int32_t small = a.Malloc(12 * MiB);
  a.Free(big);
  a.Free(small);
  // 11 MiB takes the 12 MiB block, leaving the 16 MiB one for 15 MiB.
  a.Malloc(11 * MiB);
  a.Malloc(15 * MiB);
  EXPECT_EQ(a.segments(), 2);
  EXPECT_EQ(a.reserved_bytes(), 28 * MiB);
}

}  // namespace
}  // namespace slackswap
