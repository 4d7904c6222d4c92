#include "simulator/caching_allocator.h"

#include <algorithm>
#include <iterator>

namespace slackswap {
namespace {

int64_t RoundUp(int64_t bytes, int64_t unit) {
  return (bytes + unit - 1) / unit * unit;
}

}  // namespace

CachingAllocatorModel::CachingAllocatorModel(AllocatorKind kind,
                                             int64_t limit_bytes)
    : kind_(kind), limit_(limit_bytes) {}

int64_t CachingAllocatorModel::RoundRequest(int64_t bytes) {
  if (bytes < kMinBlockBytes) return kMinBlockBytes;
  return RoundUp(bytes, kMinBlockBytes);
}

int64_t CachingAllocatorModel::SegmentBytes(int64_t rounded) {
  if (rounded <= kSmallRequestBytes) return kSmallSegmentBytes;
  if (rounded < kMinLargeAllocBytes) return kLargeSegmentBytes;
  return RoundUp(rounded, kRoundLargeBytes);
}

void CachingAllocatorModel::Insert(int32_t id) {
  const Block& b = blocks_[id];
  Pool(b.small).insert(FreeKey{b.size, b.segment, b.offset, id});
}

void CachingAllocatorModel::Erase(int32_t id) {
  const Block& b = blocks_[id];
  Pool(b.small).erase(FreeKey{b.size, b.segment, b.offset, id});
}

int32_t CachingAllocatorModel::NewBlock(int32_t segment, int32_t after,
                                        int64_t offset, int64_t size,
                                        bool small) {
  const int32_t id = static_cast<int32_t>(blocks_.size());
  Block block{segment, offset, size, true, small};
  block.prev = after;
  if (after >= 0) {
    block.next = blocks_[after].next;
    blocks_[after].next = id;
  }
  if (block.next >= 0) {
    blocks_[block.next].prev = id;
  } else {
    segments_[segment].last = id;
  }
  blocks_.push_back(block);
  return id;
}

void CachingAllocatorModel::Absorb(int32_t id, int32_t next) {
  Block& b = blocks_[id];
  b.size += blocks_[next].size;
  b.next = blocks_[next].next;
  if (b.next >= 0) {
    blocks_[b.next].prev = id;
  } else {
    segments_[b.segment].last = id;
  }
}

bool CachingAllocatorModel::IsTail(int32_t id) const {
  const Block& b = blocks_[id];
  return expandable() && b.offset + b.size == segments_[b.segment].mapped_end;
}

int32_t CachingAllocatorModel::TakeCached(int64_t size, bool small) {
  absl::btree_set<FreeKey>& pool = Pool(small);
  // The smallest fitting block: the first key not less than (size, -, -, -).
  auto it = pool.lower_bound(FreeKey{size, -1, -1, -1});
  if (it == pool.end()) return -1;
  // The growable tail goes last: any other fitting block is preferred.
  if (IsTail(std::get<3>(*it)) && std::next(it) != pool.end()) ++it;
  const int32_t id = std::get<3>(*it);
  pool.erase(it);
  return id;
}

int32_t CachingAllocatorModel::TakeNew(int64_t size, bool small) {
  if (!expandable()) {
    const int64_t bytes = SegmentBytes(size);
    if (reserved_ + bytes > limit_) ReleaseCached();
    if (reserved_ + bytes > limit_) return -1;
    const int32_t segment = static_cast<int32_t>(segments_.size());
    segments_.push_back({});
    reserved_ += bytes;
    return NewBlock(segment, -1, 0, bytes, small);
  }
  int32_t& segment = pool_segment_[small ? 1 : 0];
  if (segment < 0) {
    segment = static_cast<int32_t>(segments_.size());
    segments_.push_back({});
  }
  const int64_t page = small ? kSmallSegmentBytes : kLargeSegmentBytes;
  // The free tail, if any, and the pages that make the request fit.
  auto growth = [&](int32_t* tail) {
    const int32_t last = segments_[segment].last;
    *tail = last >= 0 && blocks_[last].free ? last : -1;
    const int64_t have = *tail < 0 ? 0 : blocks_[*tail].size;
    return RoundUp(size - have, page);
  };
  int32_t tail = -1;
  int64_t grow = growth(&tail);
  if (reserved_ + grow > limit_) {
    ReleaseCached();
    grow = growth(&tail);
    if (reserved_ + grow > limit_) return -1;
  }
  if (tail >= 0) {
    Erase(tail);
    blocks_[tail].size += grow;
  } else {
    tail = NewBlock(segment, segments_[segment].last,
                    segments_[segment].mapped_end, grow, small);
  }
  segments_[segment].mapped_end += grow;
  reserved_ += grow;
  return tail;
}

void CachingAllocatorModel::ReleaseCached() {
  for (int32_t seg = 0; seg < segments(); ++seg) {
    Segment& s = segments_[seg];
    const int32_t last = s.last;
    if (last < 0 || !blocks_[last].free) continue;
    Block& b = blocks_[last];
    if (!expandable()) {
      // A segment that is one free block goes back to the device.
      if (b.prev >= 0) continue;
      Erase(last);
      reserved_ -= b.size;
      s.last = -1;
      continue;
    }
    // The whole free pages at the end of the mapped part are unmapped.
    const int64_t page = b.small ? kSmallSegmentBytes : kLargeSegmentBytes;
    const int64_t new_end = RoundUp(b.offset, page);
    if (new_end >= s.mapped_end) continue;
    Erase(last);
    reserved_ -= s.mapped_end - new_end;
    b.size -= s.mapped_end - new_end;
    s.mapped_end = new_end;
    if (b.size == 0) {
      s.last = b.prev;
      if (b.prev >= 0) blocks_[b.prev].next = -1;
    } else {
      Insert(last);
    }
  }
}

void CachingAllocatorModel::NoteUsage() {
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  if (reserved_ > peak_reserved_) {
    peak_reserved_ = reserved_;
    allocated_at_peak_ = allocated_;
  } else if (reserved_ == peak_reserved_) {
    allocated_at_peak_ = std::max(allocated_at_peak_, allocated_);
  }
}

int32_t CachingAllocatorModel::Malloc(int64_t bytes) {
  const int64_t size = RoundRequest(bytes);
  const bool small = size <= kSmallRequestBytes;
  int32_t id = TakeCached(size, small);
  if (id < 0) id = TakeNew(size, small);
  if (id < 0) return -1;
  const int64_t remaining = blocks_[id].size - size;
  const bool split = small || expandable() ? remaining >= kMinBlockBytes
                                           : remaining > kSmallRequestBytes;
  if (split) {
    const Block& block = blocks_[id];
    const int32_t rest =
        NewBlock(block.segment, id, block.offset + size, remaining, small);
    blocks_[id].size = size;  // `block` may have moved with NewBlock
    Insert(rest);
  }
  blocks_[id].free = false;
  allocated_ += blocks_[id].size;
  NoteUsage();
  allocation_block_.push_back(id);
  return static_cast<int32_t>(allocation_block_.size()) - 1;
}

bool CachingAllocatorModel::MallocAll(absl::Span<const int64_t> bytes,
                                      std::vector<int32_t>* ids) {
  const size_t before = ids->size();
  const int64_t peak_allocated = peak_allocated_;
  const int64_t peak_reserved = peak_reserved_;
  const int64_t allocated_at_peak = allocated_at_peak_;
  for (int64_t b : bytes) {
    const int32_t id = Malloc(b);
    if (id >= 0) {
      ids->push_back(id);
      continue;
    }
    // Undo: the requests taken return to the cache, and the peaks forget
    // them (segments reserved on the way stay reserved).
    while (ids->size() > before) {
      Free(ids->back());
      ids->pop_back();
    }
    peak_allocated_ = peak_allocated;
    peak_reserved_ = peak_reserved;
    allocated_at_peak_ = allocated_at_peak;
    NoteUsage();
    return false;
  }
  return true;
}

void CachingAllocatorModel::Free(int32_t allocation) {
  int32_t id = allocation_block_[allocation];
  allocated_ -= blocks_[id].size;
  blocks_[id].free = true;
  // Merge with the next block, then with the previous one, when free.
  const int32_t next = blocks_[id].next;
  if (next >= 0 && blocks_[next].free) {
    Erase(next);
    Absorb(id, next);
  }
  const int32_t prev = blocks_[id].prev;
  if (prev >= 0 && blocks_[prev].free) {
    Erase(prev);
    Absorb(prev, id);
    id = prev;
  }
  Insert(id);
}

}  // namespace slackswap
