// File: malloc_tuning.h
//
// glibc malloc settings for processes that plan request after request. By
// default glibc gives freed memory back to the kernel as soon as 128 KB lie
// free at the top of a heap, and serves each block over 128 KB with an mmap
// of its own. A planner frees and allocates its working set for every
// request, so each request then pays for faults on fresh pages and for the
// madvise and munmap calls, whose TLB shootdowns interrupt every core the
// process runs on. Keeping up to 32 MB free per malloc arena, and taking
// blocks up to 16 MB from the heaps, makes that memory reused instead; a
// request that needs more than that still gives its excess back.
//
// Call once at start-up, before other threads exist. The server and the CLI
// (whose in-process planning is what the service is measured against) both
// do.
#ifndef SLACKSWAP_BASE_MALLOC_TUNING_H_
#define SLACKSWAP_BASE_MALLOC_TUNING_H_

#include <malloc.h>

namespace slackswap {

inline void KeepFreedMemoryForReuse() {
  mallopt(M_MMAP_THRESHOLD, 16 << 20);
  mallopt(M_TRIM_THRESHOLD, 32 << 20);
}

}  // namespace slackswap

#endif  // SLACKSWAP_BASE_MALLOC_TUNING_H_
