// The caching allocator model on hand-worked sequences: rounding, the two
// pools and their segment sizes, best fit, splitting, merging within a
// segment and never across, and the reserved bytes they leave.
#include "simulator/caching_allocator.h"

#include <vector>

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

TEST(CachingAllocatorTest, ExpandableSegmentsGrowInPagesAndReuseTheTail) {
  // The sequence that costs the native allocator a segment per size: each
  // larger request fits the grown tail of the one expandable segment.
  CachingAllocatorModel native;
  CachingAllocatorModel expandable(AllocatorKind::kExpandable);
  for (CachingAllocatorModel* a : {&native, &expandable}) {
    for (int64_t mib : {12, 14, 16, 18}) a->Free(a->Malloc(mib * MiB));
  }
  EXPECT_EQ(native.reserved_bytes(), (12 + 14 + 16 + 18) * MiB);
  EXPECT_EQ(native.segments(), 4);
  EXPECT_EQ(expandable.reserved_bytes(), 20 * MiB);  // one 20 MiB page
  EXPECT_EQ(expandable.segments(), 1);
  EXPECT_EQ(expandable.peak_allocated_bytes(), 18 * MiB);
}

TEST(CachingAllocatorTest, ExpandableSegmentsPreferAHoleToTheTail) {
  CachingAllocatorModel a(AllocatorKind::kExpandable);
  const int32_t x = a.Malloc(10 * MiB);  // maps 20 MiB: 10 | 10 free tail
  a.Malloc(3 * MiB);                     // 10 | 3 | 7 free tail
  a.Free(x);                             // 10 hole | 3 | 7 tail
  // 6 MiB: the tail (7) is the smallest fit, but it can grow, so the hole
  // (10) is taken and split: 6 | 4 hole | 3 | 7 tail.
  a.Malloc(6 * MiB);
  // 7 MiB then fits only the tail, exactly: nothing is mapped.
  a.Malloc(7 * MiB);
  EXPECT_EQ(a.reserved_bytes(), 20 * MiB);
  EXPECT_EQ(a.allocated_bytes(), 16 * MiB);
  // 4 MiB fits the hole the split left: still nothing mapped (had the tail
  // been taken for 6 MiB, this would need a page).
  a.Malloc(4 * MiB);
  EXPECT_EQ(a.reserved_bytes(), 20 * MiB);
  EXPECT_EQ(a.allocated_bytes(), 20 * MiB);
  // 1 MiB more fits nowhere: one more page.
  a.Malloc(1 * MiB + 512);
  EXPECT_EQ(a.reserved_bytes(), 40 * MiB);
}

TEST(CachingAllocatorTest, ExpandableGrowthCountsTheFreeTail) {
  CachingAllocatorModel a(AllocatorKind::kExpandable);
  a.Malloc(15 * MiB);  // 15 | 5 free tail
  // 30 MiB needs 25 more than the tail holds: two more pages.
  a.Malloc(30 * MiB);
  EXPECT_EQ(a.reserved_bytes(), 60 * MiB);
  EXPECT_EQ(a.allocated_bytes(), 45 * MiB);
  // Small requests have their own segment with 2 MiB pages.
  a.Malloc(3 * KiB);
  EXPECT_EQ(a.reserved_bytes(), 62 * MiB);
  EXPECT_EQ(a.segments(), 2);
}

TEST(CachingAllocatorTest, ALimitReleasesCachedSegmentsBeforeFailing) {
  CachingAllocatorModel a(AllocatorKind::kCaching, 30 * MiB);
  a.Free(a.Malloc(12 * MiB));
  a.Free(a.Malloc(14 * MiB));  // 12 does not fit: 26 MiB reserved
  EXPECT_EQ(a.reserved_bytes(), 26 * MiB);
  // 16 more would make 42: both cached segments go back first.
  const int32_t x = a.Malloc(16 * MiB);
  EXPECT_GE(x, 0);
  EXPECT_EQ(a.reserved_bytes(), 16 * MiB);
  EXPECT_EQ(a.peak_reserved_bytes(), 26 * MiB);
  // Nothing is free to release now: another 16 MiB fails, state unchanged.
  EXPECT_EQ(a.Malloc(16 * MiB), -1);
  EXPECT_EQ(a.reserved_bytes(), 16 * MiB);
  EXPECT_EQ(a.allocated_bytes(), 16 * MiB);
}

TEST(CachingAllocatorTest, AnExpandableLimitUnmapsFreeTailPages) {
  CachingAllocatorModel a(AllocatorKind::kExpandable, 20 * MiB);
  const int32_t x = a.Malloc(1 * MiB);  // the small pool maps one 2 MiB page
  // The large pool's first page would make 22 MiB; the small tail's free
  // half page cannot be unmapped: fails.
  EXPECT_EQ(a.Malloc(12 * MiB), -1);
  a.Free(x);
  // Now the small page is wholly free: unmapped, and the large page fits.
  EXPECT_GE(a.Malloc(12 * MiB), 0);
  EXPECT_EQ(a.reserved_bytes(), 20 * MiB);
  EXPECT_EQ(a.peak_reserved_bytes(), 20 * MiB);
}

TEST(CachingAllocatorTest, MallocAllTakesEveryRequestOrNone) {
  CachingAllocatorModel a(AllocatorKind::kCaching, 40 * MiB);
  std::vector<int32_t> ids;
  // 12 + 14 fit, 16 more would make 42 with nothing to release.
  EXPECT_FALSE(a.MallocAll({12 * MiB, 14 * MiB, 16 * MiB}, &ids));
  EXPECT_TRUE(ids.empty());
  EXPECT_EQ(a.allocated_bytes(), 0);
  EXPECT_EQ(a.peak_allocated_bytes(), 0);  // the undone requests never ran
  // The two segments reserved on the way stay cached, wholly unused.
  EXPECT_EQ(a.reserved_bytes(), 26 * MiB);
  EXPECT_EQ(a.fragmentation_bytes(), 26 * MiB);
  // Served from the cache, the reserved peak is now fully used.
  EXPECT_TRUE(a.MallocAll({12 * MiB, 14 * MiB}, &ids));
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_EQ(a.reserved_bytes(), 26 * MiB);
  EXPECT_EQ(a.fragmentation_bytes(), 0);
}

TEST(CachingAllocatorTest, FragmentationIsMeasuredAtTheReservedPeak) {
  CachingAllocatorModel a;
  const int32_t x = a.Malloc(6 * MiB);
  const int32_t y = a.Malloc(6 * MiB);
  a.Malloc(6 * MiB);
  a.Free(y);
  a.Malloc(7 * MiB);  // 40 MiB reserved for 19 MiB
  EXPECT_EQ(a.fragmentation_bytes(), 21 * MiB);
  a.Malloc(4 * MiB);  // fills part of the hole: the peak is fuller now
  EXPECT_EQ(a.fragmentation_bytes(), 17 * MiB);
  a.Free(x);  // lower usage later does not change the fullest instant
  EXPECT_EQ(a.fragmentation_bytes(), 17 * MiB);
}

}  // namespace
}  // namespace slackswap
