"""The copies of swapped tensors: offloads to host buffers on the D2H stream
and prefetches back on the H2D stream, one tick of the copy streams at a time
(a mixin of Runtime, over the state Runtime._reset sets)."""
import torch


class _TickEvent:
    """A CUDA event's stand-in on CPU (tests): done after `delay` queries."""

    def __init__(self, delay):
        self.left = delay

    def query(self):
        self.left -= 1
        return self.left <= 0

    def synchronize(self):
        self.left = 0


class _Transfers:
    """Runtime's offloads and prefetches: which may start, their copies, and
    their completion (synchronous on CPU, when their events do on CUDA)."""

    def _round(self, wait):
        """One tick of the copy streams: start at most one offload and one
        prefetch, then complete them. False if nothing started or was pending."""
        if self._async:
            return self._round_async(wait)
        started_d2h = self._start_offload()
        started_h2d = self._start_prefetch()
        if started_d2h is None and started_h2d is None:
            return False
        if started_d2h is not None:
            self._complete_offload(started_d2h)
        if started_h2d is not None:
            self._prefetches_done += 1
        return True

    def _round_async(self, wait):
        """CUDA: the copy streams run on their own. Complete the offloads and
        the prefetch whose events are done; enqueue every offload that may
        start (the D2H stream runs them in order) and, as the event model's
        H2D stream runs one at a time, the next prefetch once the previous
        one has completed. With `wait` (a step waits) and nothing else to do:
        a prefetch in flight counts as done (the step waits for its event on
        the device, not here); else block on the oldest offload."""
        progressed = self._poll_offloads(block=False)
        progressed = self._poll_prefetch() or progressed
        while self._start_offload() is not None:
            progressed = True
        if self._h2d_in_flight is None:
            tid = self._start_prefetch()
            if tid is not None:
                event = self._ready_event.get(tid) if self._cuda else _TickEvent(self._tick_delay)
                self._h2d_in_flight = (tid, event)
                progressed = True
        if wait and not progressed:
            if self._h2d_in_flight is not None:
                self._h2d_in_flight = None
                self._prefetches_done += 1
                return True
            if self._d2h_in_flight:
                return self._poll_offloads(block=True)
        return progressed

    def _poll_prefetch(self):
        if self._h2d_in_flight is None or not self._h2d_in_flight[1].query():
            return False
        self._h2d_in_flight = None
        self._prefetches_done += 1
        return True

    def _poll_offloads(self, block):
        done = False
        while self._d2h_in_flight:
            tid, event = self._d2h_in_flight[0]
            if block and not done:
                event.synchronize()
            elif not event.query():
                break
            self._d2h_in_flight.popleft()
            self._complete_offload(tid)
            done = True
        return done

    def _start_offload(self):
        s = self.s
        if self._next_offload >= len(s.offload_order):
            return None
        tid = s.offload_order[self._next_offload]
        if self._ops_done <= s.producer[tid] or self._held.get(tid) is None:
            return None
        self._next_offload += 1
        base = self._held[tid]
        self._internal = True
        try:
            host = self._host.get(tid)
            if host is None or host.numel() != base.numel() or host.dtype != base.dtype:
                host = torch.empty(base.numel(), dtype=base.dtype, device="cpu",
                                   pin_memory=base.is_cuda)
                self._host[tid] = host
            if base.is_cuda:
                stream = self._streams()[0]
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    host.copy_(base, non_blocking=True)
                    event = torch.cuda.Event()
                    event.record(stream)
                base.record_stream(stream)
                self._d2h_in_flight.append((tid, event))
            else:
                host.copy_(base)
                if self._async:  # asynchronous completion on CPU (tests)
                    self._d2h_in_flight.append((tid, _TickEvent(self._tick_delay)))
        finally:
            self._internal = False
        return tid

    def _complete_offload(self, tid):
        self._offloaded.add(tid)
        if tid in self._forward_done:
            self._let_go(tid)
        # The admission may now count the forward copy's free.
        size = self.s.size[tid]
        projection = self._projection
        for j in range(self.s.forward_end_step[tid] + 1, len(projection)):
            projection[j] -= size

    def _start_prefetch(self):
        s = self.s
        if self._waits_for_memory or self._next_prefetch >= len(s.prefetch_order):
            return None
        tid = s.prefetch_order[self._next_prefetch]
        size = s.size[tid]
        if tid not in self._offloaded or self._ops_done < s.issue_op[tid] or \
                self._bytes + self._workspace + size > s.budget:
            return None
        # Every step from the next one not started up to its deadline must
        # still fit with it (the event model's any-speed admission).
        first = self._step + (1 if self._running else 0)
        deadline = s.deadline[self._next_prefetch]
        if first < deadline and max(self._projection[first:deadline]) + size > s.budget:
            return None
        for j in range(first, deadline):
            self._projection[j] += size
        self._next_prefetch += 1
        self._hold(tid, self._copy_in(tid))
        return tid

    def _copy_in(self, tid):
        host = self._host[tid]
        self._internal = True
        try:
            if self._cuda:
                stream = self._streams()[1]
                with torch.cuda.stream(stream):
                    dev = torch.empty(host.shape, dtype=host.dtype, device="cuda")
                    dev.copy_(host, non_blocking=True)
                    event = torch.cuda.Event()
                    event.record(stream)
                dev.record_stream(torch.cuda.current_stream())
                self._ready_event[tid] = event
                return dev
            return host.clone()  # done at once: nothing for the reader to wait for
        finally:
            self._internal = False

    def _streams(self):
        if self._d2h_stream is None:
            self._d2h_stream = torch.cuda.Stream()
            self._h2d_stream = torch.cuda.Stream()
        return self._d2h_stream, self._h2d_stream
