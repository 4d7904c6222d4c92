"""Applies a SlackSwap plan in a PyTorch training step.

    trace = profile(model, (x,), loss_fn)
    report = client.plan(trace, budget_fraction=0.5).report
    for x in batches:
        with Runtime(trace, report):
            loss_fn(model(x)).backward()
        optimizer.step()

Inside the block, saved_tensors_hooks see every tensor autograd saves and a
dispatch mode counts the operators, forward and backward, against the trace:
the same operator names in the same order, and each saved tensor matched at
its producer (the trace's producer op and `producer_output`) by size and
dtype. A mismatch (another model, shape or code path) raises MismatchError
naming the first operator or tensor that differs; with on_mismatch="keep" the
runtime warns and keeps every tensor saved from there on (what was already
swapped or dropped is brought back on demand). A plan that moves nothing
needs no operator's position: after its first step (tracked as above), a
step runs with the saved-tensor hooks only, each checking one saved tensor's
storage size and dtype against the first step's (track_ops="always" tracks
every step).

Per decision:
- KEEP: untouched (autograd keeps the tensor).
- SWAP: copied to a host buffer (pinned, one per tensor, reused step after
  step) on the D2H stream, in production order, once its producer has ended;
  the device copy is let go when the copy has ended and its last forward
  reader has run. Prefetched on the H2D stream in the plan's order (earliest
  need first) once the compute stream reaches the plan's issue operator, the
  tensor fits in the budget, and every step before its deadline still fits
  with it (the event model's any-speed admission: a plan that completes in
  the event model completes within its budget at whatever speed copies and
  kernels run here); the reader waits for that copy's event only.
- RECOMPUTE: let go after its last forward reader, and rebuilt before the
  plan's rebuild point by replaying the operators that made it (the recipe of
  recording.Dataflow) from its recompute inputs, with the random-number state
  each random op had, so the rebuilt tensor is bitwise the original.
- Every copy is let go after its last reader (backward operator or rebuild).

The order of everything follows the event model (SPEC section 3) with the
plan's schedule: rebuilds run in the plan's order before their operator;
a step waits only for the prefetches it needs (and those ahead of them in
the queue) and for memory; compute allocations go before prefetches; a step
that could never start within the budget raises BudgetError naming it. On
CUDA the copies run on two streams and complete when their events do. On CPU
the same code runs with synchronous copies, each transfer taking one tick of
a clock on which operators take much longer; then the bytes the runtime
holds, sampled as each operator or rebuild starts (after its allocation),
equal the event model's resident bytes for the same plan on a trace with
equal operator times and a fast link (`ledger`, tested against Simulate's
timeline).

Bitwise: the gradients equal those of the step run without the runtime,
except where PyTorch itself computes differently under any dispatch mode
(1.13's backward of prod picks another formula there: last-bit differences).

Tensors from before the step (inputs) are kept: the caller holds them. Ops
after the trace's last operator (an optimizer step inside
the block) pass through. Double backward is not supported.
"""
import collections
import warnings

import torch
import torch.utils._python_dispatch as _python_dispatch
from torch.utils._python_dispatch import TorchDispatchMode

# PyTorch 1.13's modes: one C++-level mode, which its stack helper
# (_TorchDispatchStackMode) sets. Elsewhere the mode goes on the stack.
if hasattr(_python_dispatch, "_TorchDispatchStackMode"):
    from torch._C import _len_torch_dispatch_stack, _set_torch_dispatch_mode
else:
    _len_torch_dispatch_stack = _set_torch_dispatch_mode = None

from .errors import BudgetError, MismatchError, PlanError
from .profiler import dtype_name, passthrough_view
from .recompute import _Rebuilds
from .recording import (GRAD_BUFFER_OPS, VIEW_OPS, Dataflow, flatten_call, flatten_outputs,
                        op_name, storage_base, storage_key, storage_nbytes)
from .schedule import _Static
from .swap import _Transfers


def _identity(x):
    return x


class _Handle:
    """What autograd keeps for a swapped or recomputed tensor: which trace
    tensor, the view, and the step (of its runtime) that saved it."""
    __slots__ = ("tid", "sid", "size", "stride", "offset", "dtype", "step")

    def __init__(self, tid, t, step, sid=None):
        self.step = step
        self.tid = tid
        self.sid = sid
        self.size = tuple(t.shape)
        self.stride = tuple(t.stride())
        self.offset = t.storage_offset()
        self.dtype = t.dtype


def _dispatch_body(rt, func, args, kwargs):
    kwargs = kwargs or {}
    rt.dispatches += 1
    name = op_name(func)
    if name in VIEW_OPS:
        return passthrough_view(func, args, kwargs)
    if rt._internal or rt._done:
        return func(*args, **kwargs)
    return rt._dispatch(func, name, args, kwargs)


class _Mode(TorchDispatchMode):
    """The dispatch mode where another mode is already on PyTorch's stack."""

    def __init__(self, runtime):
        super().__init__()
        self.rt = runtime

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return _dispatch_body(self.rt, func, args, kwargs)


class _LeanMode:
    """The dispatch mode set directly as PyTorch's one C++-level mode, as
    TorchDispatchMode's stack helper sets itself, without that helper's
    context managers around every operator (a third of a bare mode's cost):
    unset while an operator runs, so what the runtime runs inside is not
    seen again."""
    __slots__ = ("rt",)

    def __init__(self, runtime):
        self.rt = runtime

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        _set_torch_dispatch_mode(None)
        try:
            return _dispatch_body(self.rt, func, args, kwargs)
        finally:
            _set_torch_dispatch_mode(self)

    def __enter__(self):
        _set_torch_dispatch_mode(self)
        return self

    def __exit__(self, *exc):
        _set_torch_dispatch_mode(None)
        return False


def _make_mode(runtime):
    if _set_torch_dispatch_mode is not None and _len_torch_dispatch_stack() == 0:
        return _LeanMode(runtime)
    return _Mode(runtime)


# Operators a training loop runs beside the step, which the runtime lets
# through uncounted where the trace does not have them (Runtime._aside):
# reading a value (loss.item()), and zeroing tensors the step did not make
# (gradients zeroed in place).
# (Names as op_name gives them: in-place ops without their underscore.)
_LOOKING_OPS = frozenset(("_local_scalar_dense",))
_ZEROING_OPS = frozenset(("zero", "zeros", "zeros_like", "fill"))

# Operators that appear or vanish when a model switches between training and
# evaluation mode (dropout, batch norm's statistics).
_MODE_OPS = ("dropout", "bernoulli", "batch_norm", "native_batch_norm")


def _mode_hint(names, k, ran):
    """A hint for a mismatch at op k that looks like a mode change: the step
    ran a dropout or batch-norm op, or the trace has one at k or just after
    (a dropout's mask comes from empty_like and bernoulli_ before it)."""
    def moded(name):
        return any(m in name for m in _MODE_OPS)
    if moded(ran) or any(moded(n) for n in names[k:k + 4]):
        return (" (dropout and batch-norm ops differ: was the model profiled in one mode and "
                "run in the other? call model.train() before both, or model.eval() before both)")
    return ""


def _check_planned(report):
    """PlanError unless the report's outcome is PLANNED (or unset, from a
    server older than outcomes)."""
    from slackswap.v1 import planning_pb2
    if report.outcome in (planning_pb2.PLAN_OUTCOME_UNSPECIFIED,
                          planning_pb2.PLAN_OUTCOME_PLANNED):
        return
    message = (f"the report's outcome is {planning_pb2.PlanOutcome.Name(report.outcome)}: "
               f"{report.reason or 'no plan'}; no plan of it fits the budget of "
               f"{report.metrics.budget_bytes} bytes. The proven floor is "
               f"{report.proven_floor_bytes} bytes")
    if report.smallest_planned_budget_bytes > 0:
        message += (f", and SlackSwap plans from {report.smallest_planned_budget_bytes} bytes: "
                    f"plan again with at least that budget")
    raise PlanError(message)


class Runtime(_Transfers, _Rebuilds):
    """Context manager that runs one training step under a plan.

    trace: the slackswap.v1.Trace the plan was made for. plan: a
    slackswap.v1.PlanResponse (Client.plan) or its PlanningReport, or a
    slackswap.v1.Plan with
    its schedule (prefetches, rebuild_points) and then budget_bytes.
    on_mismatch: "raise" (MismatchError) or "keep" (warn, keep from there on).
    A Runtime can be entered once per step, step after step; its host buffers
    are reused. After a step that tracked its operators, `ledger` lists
    (kind, index, bytes) per started operator ("op") or rebuild ("rebuild"):
    the saved bytes the runtime held (with the op's workspace, from the
    trace), and `peak_bytes` the most it held at any moment (prefetches start
    between samples).

    track_ops: "auto" or "always". A step tracks its operators (the dispatch
    mode, matched op by op against the trace) when its plan moves a tensor,
    and in the first step of a plan that moves none; with "auto", the later
    steps of a plan that keeps every tensor only check each tensor autograd
    saves, in order, against the first step's (storage size and dtype) and
    cost next to nothing: nothing is moved, so nothing needs an operator's
    position. Such a step leaves `ledger` empty and `peak_bytes` as the
    first step measured; `tracked` says which kind the last step was.
    """

    def __init__(self, trace, plan, budget_bytes=None, on_mismatch="raise", track_ops="auto",
                 _cpu_async=0):
        if on_mismatch not in ("raise", "keep"):
            raise ValueError("on_mismatch must be 'raise' or 'keep'")
        if track_ops not in ("auto", "always"):
            raise ValueError("track_ops must be 'auto' or 'always'")
        if hasattr(plan, "report"):  # a PlanResponse
            plan = plan.report
        if hasattr(plan, "plan") and hasattr(plan, "metrics"):  # a PlanningReport
            _check_planned(plan)
            if budget_bytes is None:
                budget_bytes = plan.metrics.budget_bytes
            plan = plan.plan
        if budget_bytes is None:
            raise ValueError("give budget_bytes with a bare Plan (or pass the PlanningReport)")
        self.s = _Static(trace, plan, budget_bytes)
        self.on_mismatch = on_mismatch
        # Tests: on CPU, complete each offload only after this many polls, as
        # the CUDA path completes them when their events do.
        self._tick_delay = _cpu_async
        self._host = {}  # tid -> host buffer, reused across steps
        self._active = False
        self._d2h_stream = self._h2d_stream = None
        self.ledger = []
        self.peak_bytes = 0
        self.packs = 0  # saved tensors seen, over every step
        self.dispatches = 0  # operators the dispatch mode saw, over every step
        self.tracked = True  # whether the last step tracked its operators
        self._steps = 0  # steps entered
        # A plan that moves nothing: the saved tensors of its first tracked
        # step, (storage bytes, dtype, trace tensor or None) each, that later
        # steps are checked against (track_ops="auto").
        self._untracked_ok = track_ops == "auto" and not any(
            d != "keep" for d in self.s.decision)
        self._signature = None
        self._recording = None

    # ----- entering and leaving -----

    def __enter__(self):
        if self._active:
            raise RuntimeError("this Runtime is already running a step")
        self._steps += 1
        self._active = True
        self.tracked = not (self._untracked_ok and self._signature is not None)
        if not self.tracked:
            self._saves = 0
            self._degraded = False
            self.ledger = []
            self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack_untracked,
                                                                   _identity)
            self._hooks.__enter__()
            return self
        self._reset()
        self._recording = [] if self._untracked_ok else None
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._mode = _make_mode(self)
        self._hooks.__enter__()
        try:
            self._mode.__enter__()
        except BaseException:
            self._hooks.__exit__(None, None, None)
            raise
        if self.s.shift:  # the synthetic op 0 "produces" the step's inputs
            self._begin_op(0)
            self._after_op(0)
            self._next_op = 1
        return self

    def __exit__(self, *exc):
        if not self.tracked:
            self._hooks.__exit__(*exc)
            self._active = False
            expected = len(self._signature)
            if exc[0] is None and not self._degraded and self._saves != expected:
                raise MismatchError(
                    f"the step saved {self._saves} tensors for backward, its first step "
                    f"{expected}: it differs from the step the plan was checked on")
            return False
        try:
            self._mode.__exit__(*exc)
        finally:
            self._hooks.__exit__(*exc)
            self._active = False
            if exc[0] is None and not self._degraded and self._next_op < self.s.n_ops:
                self._release_all()
                raise MismatchError(
                    f"the step ended after {self._next_op} of the trace's {self.s.n_ops} "
                    f"operators (next expected: op {self._next_op} "
                    f"{self.s.names[self._next_op]}): the whole step, backward included, "
                    f"belongs inside the `with` block")
            if exc[0] is None and self._recording is not None and not self._degraded:
                self._signature = self._recording  # a whole step, matched op by op
            self._recording = None
            self._release_all()
        return False

    def _pack_untracked(self, t):
        """A saved tensor of an untracked step: the same storage size and
        dtype as the first step's at this position, and kept."""
        self.packs += 1
        i = self._saves
        self._saves = i + 1
        if self._degraded:
            return t
        signature = self._signature
        nbytes, dtype = storage_nbytes(t), t.dtype
        if i >= len(signature) or signature[i][0] != nbytes or signature[i][1] != dtype:
            s = self.s
            if i >= len(signature):
                what = f"its first step saved only {len(signature)}"
            else:
                tid = signature[i][2]
                named = (f" (trace tensor {tid}, {s.names_t[tid]}, output "
                         f"{s.producer_output[tid]} of op {s.producer[tid]} "
                         f"{s.names[s.producer[tid]]})" if tid is not None else "")
                what = (f"the first step saved {signature[i][0]} bytes of "
                        f"{dtype_name(signature[i][1])} there{named}")
            self._mismatch(f"saved tensor {i} of the step: {nbytes} bytes of "
                           f"{dtype_name(dtype)}; {what}")
        return t

    def _reset(self):
        s = self.s
        self.flow = Dataflow()
        self.ledger = []
        self.peak_bytes = 0
        self._cuda = False
        self._internal = False
        self._done = False
        self._degraded = False
        self._next_op = 0            # trace index of the next op to dispatch
        self._step = 0               # next step to start
        self._pending_finish = None  # the step that ran and has not finished
        self._boundary_done = False  # the next op's boundary has run (via an unpack)
        self._ops_done = 0
        self._held = {}              # tid -> device tensor over its storage (None: unseen input)
        self._bytes = 0
        self._key_tid = {}           # storage key -> tid, for pack
        self._sid_tid = {}
        self._tid_sid = {}
        self._tid_version = {}
        self._offloaded = set()
        self._forward_done = set()
        self._next_offload = 0
        self._next_prefetch = 0
        self._prefetches_done = 0
        self._waits_for_memory = False
        self._running = False        # the step self._step runs (its copies go on)
        self._projection = list(s.profile)  # per step: the admission's projection

        self._ready_event = {}       # tid -> CUDA event the reader waits for
        self._workspace = 0          # the running op's workspace (from the trace)
        self._async = self._tick_delay > 0  # copies complete when their events do
        self._d2h_in_flight = collections.deque()
        self._h2d_in_flight = None   # (tid, event): one prefetch at a time

    def _release_all(self):
        self._held.clear()
        self._bytes = 0
        self._d2h_in_flight = collections.deque()
        self._h2d_in_flight = None
        self._ready_event = {}
        self.flow = None
        self._key_tid = {}

    # ----- the ledger -----

    def _hold(self, tid, tensor):
        if tid not in self._held:
            self._bytes += self.s.size[tid]
            self.peak_bytes = max(self.peak_bytes, self._bytes + self._workspace)
        self._held[tid] = tensor

    def _let_go(self, tid):
        if tid in self._held:
            del self._held[tid]
            self._bytes -= self.s.size[tid]

    def _sample(self, kind, index):
        resident = self._bytes + self._workspace
        self.ledger.append((kind, index, resident))
        self.peak_bytes = max(self.peak_bytes, resident)
        if resident > self.s.budget:
            raise BudgetError(f"slackswap runtime: {kind} {index} holds {resident} bytes, over "
                              f"the budget of {self.s.budget} (please report it)")

    # ----- matching -----

    def _mismatch(self, message):
        if self.on_mismatch == "raise":
            raise MismatchError(message)
        if not self._degraded:
            warnings.warn(f"slackswap runtime: {message}; keeping every tensor from here on",
                          RuntimeWarning, stacklevel=3)
            self._degraded = True

    def _check_and_bind(self, tid, t, sid):
        s = self.s
        nbytes = storage_nbytes(t)
        dtype = dtype_name(t.dtype)
        if nbytes != s.size[tid] or (s.dtype[tid] and dtype != s.dtype[tid]):
            self._mismatch(
                f"saved tensor {tid} ({s.names_t[tid]}, output {s.producer_output[tid]} of op "
                f"{s.producer[tid]} {s.names[s.producer[tid]]}): the trace has "
                f"{s.size[tid]} bytes of {s.dtype[tid] or '?'}, the step made {nbytes} bytes "
                f"of {dtype}")
            return False
        if t.is_cuda:
            self._cuda = self._async = True
        self._internal = True
        try:
            base = storage_base(t)
        finally:
            self._internal = False
        self._hold(tid, base)
        self._key_tid[storage_key(t)] = tid
        self._sid_tid[sid] = tid
        self._tid_sid[tid] = sid
        self._tid_version[tid] = self.flow.version[sid]
        return True

    def _on_external(self, sid, t):
        """First sight of a storage from before the step: kept for replays.
        The trace keeps such tensors (the caller holds them): they are counted
        from op 0 and need no binding."""
        self.flow.external_objects[sid] = t

    # ----- the dispatch mode -----

    def _dispatch(self, func, name, args, kwargs):
        s = self.s
        k = self._next_op
        if k >= s.n_ops:
            self._done = True  # past the step (an optimizer step): pass through
            return func(*args, **kwargs)
        if k >= s.num_forward:
            if name in GRAD_BUFFER_OPS:
                return self.flow.grad_buffer(func, args, kwargs)  # a first .grad: not counted
            if self.flow.accumulates(func, args, kwargs):
                return func(*args, **kwargs)  # into an existing .grad: not counted
        if not self._degraded and name != s.names[k]:
            if self._aside(name, args, kwargs):
                return func(*args, **kwargs)  # not the step's: not counted
            self._mismatch(f"op {k}: the trace has {s.names[k]}, the step ran {name}"
                           + _mode_hint(s.names, k, name))
        if self._degraded:
            out = func(*args, **kwargs)
            self._next_op += 1
            return out
        if not self._boundary_done:
            self._begin_op(k)
        self._boundary_done = False
        forward = k < s.num_forward
        if forward:
            rec, out = self.flow.record(func, args, kwargs, lambda: (func(*args, **kwargs), 0),
                                        hold_external=self._on_external,
                                        rng_state=self._rng_state)
            for sid in rec.new:  # a new storage where an old one was: forget the old
                self._key_tid.pop(self.flow_key(sid, rec, out), None)
            self._bind_products(k, rec, args, kwargs, out)
        else:
            # Recorded too (as the profiler does), so that storages made in
            # backward are known to `accumulates`; nothing from backward is
            # held for replays.
            _, out = self.flow.record(func, args, kwargs, lambda: (func(*args, **kwargs), 0))
        self._next_op += 1
        if not self._degraded:
            self._after_op(k)
        return out

    def _aside(self, name, args, kwargs):
        """An op outside the profiled step that a training loop runs inside
        the block, let through uncounted: one that only reads a value
        (loss.item()); one that zeroes tensors the step did not make
        (zero_grad with set_to_none=False); and, between the forward pass and
        backward, any op that reads no saved tensor of the trace (an isfinite
        check of the loss, logging). None of them produces or changes what
        the plan moves."""
        if name in _LOOKING_OPS:
            return True
        flat = flatten_call(args, kwargs)[0]
        tensors = [t for t in flat if isinstance(t, torch.Tensor) and storage_nbytes(t) > 0]
        if name in _ZEROING_OPS:
            return not any(storage_key(t) in self.flow.key_to_sid for t in tensors)
        if self._next_op == self.s.num_forward:
            return not any(storage_key(t) in self._key_tid for t in tensors)
        return False

    def flow_key(self, sid, rec, out):
        outs = flatten_outputs(out)
        return storage_key(outs[rec.outputs.index(sid)])

    def _bind_products(self, k, rec, args, kwargs, out):
        s = self.s
        outs = flatten_outputs(out)
        for tid in s.produces.get(k, ()):
            j = s.producer_output[tid]
            t = None
            sid = None
            if 0 <= j < len(outs) and isinstance(outs[j], torch.Tensor):
                t, sid = outs[j], rec.outputs[j]
            elif j < 0 and -1 - j < len(rec.writes):
                sid = rec.writes[-1 - j]
                for x in flatten_call(args, kwargs)[0]:
                    if isinstance(x, torch.Tensor) and self.flow.key_to_sid.get(
                            storage_key(x)) == sid:
                        t = x
                        break
            if t is None or sid is None:
                self._mismatch(f"saved tensor {tid} ({s.names_t[tid]}): op {k} {s.names[k]} "
                               f"has no output {j}")
                return
            if not self._check_and_bind(tid, t, sid):
                return

    # ----- saved tensor hooks -----

    def _pack(self, t):
        self.packs += 1
        if self._recording is not None:
            self._recording.append((storage_nbytes(t), t.dtype,
                                    self._key_tid.get(storage_key(t))))
        if self._degraded or self._done:
            return t
        if self._next_op > self.s.num_forward:
            raise RuntimeError("slackswap runtime: a tensor was saved during backward "
                               "(double backward is not supported)")
        if storage_nbytes(t) == 0:
            return t
        key = storage_key(t)
        if key not in self.flow.key_to_sid:
            # Autograd saves an op's inputs before the op runs: an input from
            # before the step may be seen here first (as by the profiler).
            self.flow.sid_of_input(t, self._on_external)
        tid = self._key_tid.get(key)
        if tid is None:
            sid = self.flow.key_to_sid[key]
            if self.flow.writers[sid][0] >= 0 and sid not in self._sid_tid:
                # Saved before its producer (the last writer in forward) ran,
                # as an LSTM saves its gates chunk by chunk: the trace tensor
                # it becomes is bound at the producer, resolved at unpack.
                return _Handle(None, t, self._steps, sid)
            return t
        if self.s.decision[tid] == "keep":
            return t
        base = self._held.get(tid)
        if base is None or base.dtype != t.dtype:  # a view as another dtype: kept
            return t
        return _Handle(tid, t, self._steps)

    def _unpack(self, h):
        if not isinstance(h, _Handle):
            return h
        if not self._active or h.step != self._steps:
            # Its step ended: what the plan moved is gone with it.
            raise MismatchError(
                "a tensor saved by a step that has ended was read: the whole step, backward "
                "included, must run inside the `with` block of its Runtime")
        if h.tid is None:
            h.tid = self._sid_tid.get(h.sid)
            if h.tid is None:
                raise MismatchError("a tensor saved in forward was never produced as the trace "
                                    "says (the step differs from its profile)")
        if not self._degraded and not self._boundary_done and self._next_op < self.s.n_ops:
            self._begin_op(self._next_op)
            self._boundary_done = True
        base = self._held.get(h.tid)
        if base is None:
            base = self._on_demand(h.tid)
        if self._cuda and h.tid in self._ready_event:
            torch.cuda.current_stream().wait_event(self._ready_event[h.tid])
        self._internal = True
        try:
            with torch.no_grad():
                return base.as_strided(h.size, h.stride, h.offset)
        finally:
            self._internal = False

    # ----- the event model, step by step -----

    def _begin_op(self, k):
        """The boundary before op k: finish the previous step, run the
        rebuilds before k, wait for what op k needs."""
        s = self.s
        self._finish_pending()
        while s.steps[self._step][0] == "rebuild":
            tid = s.steps[self._step][1]
            self._start_step(self._step, s.size[tid])
            self._rebuild(tid)
            self._sample("rebuild", tid)
            self._during_step()
            self._pending_finish = self._step
            self._finish_pending()
        assert s.steps[self._step] == ("op", k), (s.steps[self._step], k)
        self._start_step(self._step, s.alloc[k])

    def _after_op(self, k):
        """Op k has run and its products are held: sample, then the copies
        that run while it computes."""
        s = self.s
        if k == 0 and s.shift:
            for tid in s.produces.get(0, ()):
                if tid not in self._held:
                    self._hold(tid, None)  # an input, seen at its first use
        self._workspace = s.workspace[k]
        self._sample("op", k)
        self._during_step()
        self._pending_finish = self._step

    def _finish_pending(self):
        step = self._pending_finish
        if step is None:
            return
        self._pending_finish = None
        s = self.s
        kind, index = s.steps[step]
        self._workspace = 0
        if kind == "op":
            self._ops_done = index + 1
            for tid in s.forward_release.get(index, ()):
                if s.decision[tid] == "recompute" or tid in self._offloaded:
                    self._let_go(tid)
                else:
                    self._forward_done.add(tid)
        for tid in s.release_after_step.get(step, ()):
            self._let_go(tid)
            self._ready_event.pop(tid, None)
        self._step = step + 1

    def _start_step(self, step, alloc):
        """Waits (in the model) until `step` can start: its prefetches done and
        its allocation within the budget."""
        s = self.s
        while True:
            self._waits_for_memory = False
            if self._prefetches_done >= s.needed[step]:
                if self._bytes + self._workspace + alloc <= s.budget:
                    return
                self._waits_for_memory = True
            if not self._round(wait=True):
                # Nothing pending can help. The event model proves this
                # unreachable for a plan that completes in it at one speed:
                # the plan does not fit this trace and budget.
                kind, index = s.steps[step]
                raise BudgetError(
                    f"slackswap runtime: {'op' if kind == 'op' else 'the rebuild of tensor'} "
                    f"{index} cannot start within the budget ({self._bytes} of {s.budget} "
                    f"bytes held, {alloc} more needed, prefetches {self._prefetches_done} of "
                    f"{s.needed[step]} done) and nothing pending frees memory: the plan does "
                    "not complete within this budget (Simulate it on this trace)")

    def _during_step(self):
        self._running = True
        try:
            while self._round(wait=False):
                pass
        finally:
            self._running = False
