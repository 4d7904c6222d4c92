// File: caching_allocator.h
//
// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator,
// the native backend without expandable segments), for predicting the bytes
// it reserves from the device while a plan's allocations and frees run: the
// first piece of issue 17's third part (the replay does not feed it yet).
//
// The rules modelled:
// - Every request is rounded up to a multiple of 512 bytes (at least 512).
// - Requests of at most 1 MiB come from the small pool, larger ones from the
//   large pool; a block never moves between pools.
// - A request takes the smallest free block of its pool that fits (among
//   equal sizes, the oldest segment's, lowest offset first).
// - Without one, a new segment is reserved: 2 MiB for the small pool, 20 MiB
//   for requests under 10 MiB, otherwise the request rounded up to 2 MiB.
// - The block is split when what remains is at least 512 bytes (small pool)
//   or more than 1 MiB (large pool): the request takes the front.
// - A freed block merges with free neighbours in its segment (never across
//   segments) and stays cached: reserved bytes never shrink (no
//   empty_cache, and device memory is taken as unbounded).
// Allocated bytes are the sizes of the blocks in use, as
// torch.cuda.memory_allocated reports them (rounded, and whole when not
// split).
#ifndef SLACKSWAP_SIMULATOR_CACHING_ALLOCATOR_H_
#define SLACKSWAP_SIMULATOR_CACHING_ALLOCATOR_H_

#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace slackswap {

class CachingAllocatorModel {
 public:
  static constexpr int64_t kMinBlockBytes = 512;
  static constexpr int64_t kSmallRequestBytes = int64_t{1} << 20;
  static constexpr int64_t kSmallSegmentBytes = int64_t{2} << 20;
  static constexpr int64_t kLargeSegmentBytes = int64_t{20} << 20;
  static constexpr int64_t kMinLargeAllocBytes = int64_t{10} << 20;
  static constexpr int64_t kRoundLargeBytes = int64_t{2} << 20;

  // The request as the allocator rounds it.
  static int64_t RoundRequest(int64_t bytes);
  // The segment reserved for a rounded request that no cached block fits.
  static int64_t SegmentBytes(int64_t rounded);

  // Takes `bytes` (>= 0); returns the allocation's id for Free.
  int32_t Malloc(int64_t bytes);
  // Returns allocation `id` to the cache. Each id is freed once.
  void Free(int32_t id);

  int64_t allocated_bytes() const { return allocated_; }
  int64_t reserved_bytes() const { return reserved_; }
  int64_t peak_allocated_bytes() const { return peak_allocated_; }
  int64_t peak_reserved_bytes() const { return peak_reserved_; }
  int32_t segments() const { return static_cast<int32_t>(segments_.size()); }

 private:
  struct Block {
    int32_t segment = 0;
    int64_t offset = 0;
    int64_t size = 0;
    bool free = true;
    bool small = false;
  };
  // Free blocks of a pool in best-fit order: size, then segment, then offset.
  using FreeKey = std::tuple<int64_t, int32_t, int64_t>;

  std::set<FreeKey>& Pool(bool small) { return small ? small_ : large_; }
  void Insert(int32_t block);
  void Erase(int32_t block);

  std::vector<Block> blocks_;  // by id; ids of merged blocks are retired
  // Per segment: its blocks by offset.
  std::vector<std::map<int64_t, int32_t>> segments_;
  std::set<FreeKey> small_, large_;
  std::map<FreeKey, int32_t> free_ids_;
  std::vector<int32_t> allocation_block_;  // allocation id -> block id
  int64_t allocated_ = 0;
  int64_t reserved_ = 0;
  int64_t peak_allocated_ = 0;
  int64_t peak_reserved_ = 0;
};

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_CACHING_ALLOCATOR_H_
