#include "simulator/caching_allocator.h"

#include <algorithm>
#include <iterator>

namespace slackswap {

int64_t CachingAllocatorModel::RoundRequest(int64_t bytes) {
  if (bytes < kMinBlockBytes) return kMinBlockBytes;
  return (bytes + kMinBlockBytes - 1) / kMinBlockBytes * kMinBlockBytes;
}

int64_t CachingAllocatorModel::SegmentBytes(int64_t rounded) {
  if (rounded <= kSmallRequestBytes) return kSmallSegmentBytes;
  if (rounded < kMinLargeAllocBytes) return kLargeSegmentBytes;
  return (rounded + kRoundLargeBytes - 1) / kRoundLargeBytes * kRoundLargeBytes;
}

void CachingAllocatorModel::Insert(int32_t id) {
  const Block& b = blocks_[id];
  const FreeKey key{b.size, b.segment, b.offset};
  Pool(b.small).insert(key);
  free_ids_[key] = id;
}

void CachingAllocatorModel::Erase(int32_t id) {
  const Block& b = blocks_[id];
  const FreeKey key{b.size, b.segment, b.offset};
  Pool(b.small).erase(key);
  free_ids_.erase(key);
}

int32_t CachingAllocatorModel::Malloc(int64_t bytes) {
  const int64_t size = RoundRequest(bytes);
  const bool small = size <= kSmallRequestBytes;
  std::set<FreeKey>& pool = Pool(small);
  int32_t id = -1;
  // The smallest fitting block: the first key not less than (size, -, -).
  auto it = pool.lower_bound(FreeKey{size, -1, -1});
  if (it != pool.end()) {
    id = free_ids_.at(*it);
    Erase(id);
  } else {
    const int64_t segment_bytes = SegmentBytes(size);
    const int32_t segment = static_cast<int32_t>(segments_.size());
    id = static_cast<int32_t>(blocks_.size());
    blocks_.push_back({segment, 0, segment_bytes, true, small});
    segments_.push_back({{0, id}});
    reserved_ += segment_bytes;
    peak_reserved_ = std::max(peak_reserved_, reserved_);
  }
  Block& block = blocks_[id];
  const int64_t remaining = block.size - size;
  const bool split =
      small ? remaining >= kMinBlockBytes : remaining > kSmallRequestBytes;
  if (split) {
    const int32_t rest = static_cast<int32_t>(blocks_.size());
    blocks_.push_back(
        {block.segment, block.offset + size, remaining, true, small});
    blocks_[id].size = size;  // `block` may have moved with the push
    segments_[blocks_[rest].segment][blocks_[rest].offset] = rest;
    Insert(rest);
  }
  blocks_[id].free = false;
  allocated_ += blocks_[id].size;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  allocation_block_.push_back(id);
  return static_cast<int32_t>(allocation_block_.size()) - 1;
}

void CachingAllocatorModel::Free(int32_t allocation) {
  int32_t id = allocation_block_[allocation];
  allocated_ -= blocks_[id].size;
  blocks_[id].free = true;
  std::map<int64_t, int32_t>& segment = segments_[blocks_[id].segment];
  // Merge with the next block, then with the previous one, when free.
  auto at = segment.find(blocks_[id].offset);
  auto next = std::next(at);
  if (next != segment.end() && blocks_[next->second].free) {
    Erase(next->second);
    blocks_[id].size += blocks_[next->second].size;
    segment.erase(next);
  }
  at = segment.find(blocks_[id].offset);
  if (at != segment.begin()) {
    const auto prev = std::prev(at);
    if (blocks_[prev->second].free) {
      const int32_t before = prev->second;
      Erase(before);
      blocks_[before].size += blocks_[id].size;
      segment.erase(at);
      id = before;
    }
  }
  Insert(id);
}

}  // namespace slackswap
