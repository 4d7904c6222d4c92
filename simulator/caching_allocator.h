// File: caching_allocator.h
//
// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator,
// the native backend), with or without expandable segments, for predicting
// the bytes it reserves from the device while a plan's allocations and frees
// run (the event model feeds it; see docs/event-model.md).
//
// The rules modelled, in both modes:
// - Every request is rounded up to a multiple of 512 bytes (at least 512).
// - Requests of at most 1 MiB come from the small pool, larger ones from the
//   large pool; a block never moves between pools.
// - A request takes the smallest free block of its pool that fits (among
//   equal sizes, the oldest segment's, lowest offset first).
// - A freed block merges with free neighbours in its segment (never across
//   segments) and stays cached.
// Native segments (kCaching):
// - Without a fitting block, a new segment is reserved: 2 MiB for the small
//   pool, 20 MiB for requests under 10 MiB, otherwise the request rounded up
//   to 2 MiB.
// - The block is split when what remains is at least 512 bytes (small pool)
//   or more than 1 MiB (large pool): the request takes the front.
// Expandable segments (kExpandable, expandable_segments:True):
// - Each pool has one segment of unbounded address space, mapped from its
//   start in pages of 2 MiB (small pool) or 20 MiB (large pool); reserved
//   bytes are the mapped pages.
// - The free block at the end of the mapped part (the tail) counts as
//   growable: a request takes it only when no other free block fits.
// - Without a fitting block, the tail (or a new block at the mapped end) is
//   grown by the fewest pages that make the request fit.
// - A block is split when at least 512 bytes remain, in both pools.
// With a limit (the budget on reserved bytes): a request that would take
// reserved bytes over it first releases what the allocator can give back
// (native: every segment that is one free block, as release_cached_blocks
// does; expandable: the whole free pages at the end of each pool's mapped
// part) and fails if it still does not fit. Allocated bytes are the sizes of
// the blocks in use, as torch.cuda.memory_allocated reports them (rounded,
// and whole when not split).
//
// Not thread-safe; cost O(log blocks) per call.
#ifndef SLACKSWAP_SIMULATOR_CACHING_ALLOCATOR_H_
#define SLACKSWAP_SIMULATOR_CACHING_ALLOCATOR_H_

#include <cstdint>
#include <limits>
#include <tuple>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/types/span.h"

namespace slackswap {

enum class AllocatorKind : uint8_t { kNone, kCaching, kExpandable };

class CachingAllocatorModel {
 public:
  static constexpr int64_t kMinBlockBytes = 512;
  static constexpr int64_t kSmallRequestBytes = int64_t{1} << 20;
  static constexpr int64_t kSmallSegmentBytes = int64_t{2} << 20;
  static constexpr int64_t kLargeSegmentBytes = int64_t{20} << 20;
  static constexpr int64_t kMinLargeAllocBytes = int64_t{10} << 20;
  static constexpr int64_t kRoundLargeBytes = int64_t{2} << 20;
  static constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();

  // `kind` is kCaching or kExpandable; `limit_bytes` bounds reserved bytes.
  explicit CachingAllocatorModel(AllocatorKind kind = AllocatorKind::kCaching,
                                 int64_t limit_bytes = kNoLimit);

  // The request as the allocator rounds it.
  static int64_t RoundRequest(int64_t bytes);
  // The native segment reserved for a rounded request that no cached block
  // fits.
  static int64_t SegmentBytes(int64_t rounded);

  // Takes `bytes` (>= 0); returns the allocation's id for Free, or -1 when
  // the limit leaves no room (the state is then as the releases left it).
  int32_t Malloc(int64_t bytes);
  // Takes every request of `bytes` in order, or none: when one fails, those
  // taken before it are freed again and false is returned. Appends the ids
  // to `*ids` on success.
  bool MallocAll(absl::Span<const int64_t> bytes, std::vector<int32_t>* ids);
  // Returns allocation `id` to the cache. Each id is freed once.
  void Free(int32_t id);

  int64_t allocated_bytes() const { return allocated_; }
  int64_t reserved_bytes() const { return reserved_; }
  int64_t peak_allocated_bytes() const { return peak_allocated_; }
  int64_t peak_reserved_bytes() const { return peak_reserved_; }
  // Reserved minus allocated bytes at the reserved peak, at the fullest
  // instant of it: the memory held that the plan could not use.
  int64_t fragmentation_bytes() const {
    return peak_reserved_ - allocated_at_peak_;
  }
  // Native segments reserved so far (released ones included); expandable
  // pools in use.
  int32_t segments() const { return static_cast<int32_t>(segments_.size()); }

 private:
  struct Block {
    int32_t segment = 0;
    int64_t offset = 0;
    int64_t size = 0;
    bool free = true;
    bool small = false;
    // The blocks before and after it in its segment (by offset), or -1.
    int32_t prev = -1;
    int32_t next = -1;
  };
  struct Segment {
    int32_t last = -1;       // the block at its end; -1 when released
    int64_t mapped_end = 0;  // expandable: bytes mapped
  };
  // Free blocks of a pool in best-fit order: size, then segment, then
  // offset; the block's id last (it orders nothing: (segment, offset) is
  // unique).
  using FreeKey = std::tuple<int64_t, int32_t, int64_t, int32_t>;

  bool expandable() const { return kind_ == AllocatorKind::kExpandable; }
  absl::btree_set<FreeKey>& Pool(bool small) { return small ? small_ : large_; }
  void Insert(int32_t block);
  void Erase(int32_t block);
  // A free block placed right after block `after` of `segment` (-1: as the
  // segment's first and only block).
  int32_t NewBlock(int32_t segment, int32_t after, int64_t offset, int64_t size,
                   bool small);
  // Block `id` takes in its free neighbour `next` (which goes away).
  void Absorb(int32_t id, int32_t next);
  bool IsTail(int32_t block) const;
  // A cached block for a rounded request, or -1; taken out of its pool.
  int32_t TakeCached(int64_t size, bool small);
  // A block grown or reserved for a rounded request no cached block fits, or
  // -1 when the limit forbids it; taken out of its pool.
  int32_t TakeNew(int64_t size, bool small);
  void ReleaseCached();
  void NoteUsage();

  AllocatorKind kind_;
  int64_t limit_;
  std::vector<Block> blocks_;  // by id; ids of merged blocks are retired
  std::vector<Segment> segments_;
  int32_t pool_segment_[2] = {-1, -1};  // expandable: [large, small]
  absl::btree_set<FreeKey> small_, large_;
  std::vector<int32_t> allocation_block_;  // allocation id -> block id
  int64_t allocated_ = 0;
  int64_t reserved_ = 0;
  int64_t peak_allocated_ = 0;
  int64_t peak_reserved_ = 0;
  int64_t allocated_at_peak_ = 0;
};

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_CACHING_ALLOCATOR_H_
