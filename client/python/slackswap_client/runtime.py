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
from torch.utils._python_dispatch import TorchDispatchMode

import torch.utils._python_dispatch as _python_dispatch

# PyTorch 1.13's modes: one C++-level mode, which its stack helper
# (_TorchDispatchStackMode) sets. Elsewhere the mode goes on the stack.
if hasattr(_python_dispatch, "_TorchDispatchStackMode"):
    from torch._C import _len_torch_dispatch_stack, _set_torch_dispatch_mode
else:
    _len_torch_dispatch_stack = _set_torch_dispatch_mode = None

from . import stubs
from .profiler import dtype_name, passthrough_view
from .recording import (GRAD_BUFFER_OPS, VIEW_OPS, Dataflow, TensorRef, flatten_call,
                        flatten_outputs, op_name, storage_base, storage_key, storage_nbytes,
                        unflatten_call)


class MismatchError(RuntimeError):
    """The step differs from the profiled trace."""


class PlanError(ValueError):
    """The report holds no plan to run (its outcome is not PLANNED): running
    its fallback plan would take more memory than the budget."""


class BudgetError(RuntimeError):
    """A step cannot start within the budget and nothing pending frees memory.
    The event model proves this unreachable for a plan the service returned
    (docs/event-model.md, "Prefetch admission"); a plan made by hand, or for
    another trace, can reach it."""


class _Static:
    """What the trace and plan fix, computed once per Runtime."""

    def __init__(self, trace, plan, budget_bytes):
        stubs.load()
        from slackswap.v1 import plan_pb2, trace_pb2
        ops = trace.operators
        self.n_ops = len(ops)
        self.names = [op.name for op in ops]
        self.shift = 1 if ops and ops[0].name == "input" and ops[0].phase == \
            trace_pb2.PHASE_FORWARD else 0
        self.num_forward = 0
        while self.num_forward < self.n_ops and \
                ops[self.num_forward].phase == trace_pb2.PHASE_FORWARD:
            self.num_forward += 1
        n = len(trace.tensors)
        if len(plan.tensors) != n:
            raise ValueError(f"plan.tensors has {len(plan.tensors)} entries; the trace has "
                             f"{n} tensors")
        self.budget = budget_bytes
        self.size = [t.size_bytes for t in trace.tensors]
        self.names_t = [t.name for t in trace.tensors]
        self.producer = [t.producer_op for t in trace.tensors]
        self.producer_output = [t.producer_output for t in trace.tensors]
        self.dtype = [t.dtype for t in trace.tensors]
        self.inputs = [set(t.recompute_inputs) for t in trace.tensors]
        decisions = {plan_pb2.DECISION_KEEP: "keep", plan_pb2.DECISION_SWAP: "swap",
                     plan_pb2.DECISION_RECOMPUTE: "recompute"}
        self.decision = []
        for i, tp in enumerate(plan.tensors):
            if tp.decision not in decisions:
                raise ValueError(f"plan.tensors[{i}].decision is unspecified")
            self.decision.append(decisions[tp.decision])
        last_fwd, last_bwd = [], []
        reads = collections.defaultdict(list)
        for i, t in enumerate(trace.tensors):
            fwd = [u for u in t.use_ops if u < self.num_forward]
            bwd = [u for u in t.use_ops if u >= self.num_forward]
            last_fwd.append(max([t.producer_op] + fwd))
            last_bwd.append(max(bwd) if bwd else -1)
            for u in bwd:
                reads[u].append(i)
        self.last_fwd = last_fwd

        swaps = [i for i in range(n) if self.decision[i] == "swap"]
        recomputes = [i for i in range(n) if self.decision[i] == "recompute"]
        if swaps and len(plan.prefetches) != len(swaps):
            raise ValueError("the plan has no prefetch schedule (plan.prefetches): use the plan "
                             "a Plan or Simulate response returns")
        if recomputes and sum(len(p.tensors) for p in plan.rebuild_points) != len(recomputes):
            raise ValueError("the plan has no rebuild points (plan.rebuild_points): use the plan "
                             "a Plan or Simulate response returns")
        self.offload_order = list(plan.offload_order) if plan.offload_order else sorted(
            swaps, key=lambda i: (self.producer[i], i))
        self.prefetch_order = [p.tensor for p in plan.prefetches]
        self.issue_op = {p.tensor: p.issue_op for p in plan.prefetches}
        rank = {t: k for k, t in enumerate(self.prefetch_order)}
        rebuilds = collections.defaultdict(list)
        for point in plan.rebuild_points:
            rebuilds[point.before_op].extend(point.tensors)

        # Steps: the rebuilds before each op, then the op.
        self.steps = []
        self.op_step = [0] * self.n_ops
        rebuild_step = {}
        for o in range(self.n_ops):
            for t in rebuilds.get(o, ()):
                rebuild_step[t] = len(self.steps)
                self.steps.append(("rebuild", t))
            self.op_step[o] = len(self.steps)
            self.steps.append(("op", o))
        self.release_after_step = collections.defaultdict(list)
        for i in range(n):
            last = self.op_step[last_bwd[i]] if last_bwd[i] >= 0 else -1
            for r in recomputes:
                if i in self.inputs[r]:
                    last = max(last, rebuild_step[r])
            self.release_after_step[last].append(i)
        self.forward_release = collections.defaultdict(list)
        for i in range(n):
            if self.decision[i] != "keep":
                self.forward_release[last_fwd[i]].append(i)
        self.needed = [0] * len(self.steps)
        for o in range(self.num_forward, self.n_ops):
            self.needed[self.op_step[o]] = max(
                [rank[t] + 1 for t in reads[o] if t in rank] + [0])
        for t, s in rebuild_step.items():
            self.needed[s] = max([rank[u] + 1 for u in self.inputs[t] if u in rank] + [0])
        self.produces = collections.defaultdict(list)
        for i in range(n):
            self.produces[self.producer[i]].append(i)
        self.alloc = [ops[o].workspace_bytes + sum(self.size[t] for t in self.produces[o])
                      for o in range(self.n_ops)]
        self.workspace = [ops[o].workspace_bytes for o in range(self.n_ops)]
        for i in self.produces[0] if self.shift else ():
            if self.decision[i] != "keep":
                raise ValueError(f"plan.tensors[{i}]: a tensor from before the step "
                                 "(produced by op 0) can only be kept")
        self._admission(rebuild_step)

    def _admission(self, rebuild_step):
        """What the event model's prefetch admission needs (docs/event-model.md,
        "Prefetch admission"): each prefetch's deadline (the first step that
        cannot start before it has ended) and the static profile of the steps
        (bytes resident at each step's start, plus its own allocation), with
        every swapped tensor's forward copy held until its offload is seen to
        end (the runtime takes it off then)."""
        n_steps = len(self.steps)
        self.deadline = [n_steps] * len(self.prefetch_order)
        required = 0
        for j in range(n_steps):
            while required < self.needed[j]:
                self.deadline[required] = j
                required += 1
        rank = {t: k for k, t in enumerate(self.prefetch_order)}
        last_reader = {}
        for step, tids in self.release_after_step.items():
            for t in tids:
                last_reader[t] = step
        diff = [0] * (n_steps + 1)

        def hold(first, last, size):
            if first <= last:
                diff[first] += size
                diff[last + 1] -= size

        self.forward_end_step = {}
        for t, decision in enumerate(self.decision):
            size = self.size[t]
            produced = self.op_step[self.producer[t]]
            forward_end = self.op_step[self.last_fwd[t]]
            last = last_reader.get(t, -1)
            if decision == "keep":
                hold(produced + 1, last, size)
                continue
            hold(produced + 1, forward_end, size)
            if decision == "recompute":
                hold(rebuild_step[t] + 1, last, size)
            else:
                self.forward_end_step[t] = forward_end
                hold(forward_end + 1, n_steps - 1, size)
                hold(self.deadline[rank[t]], last, size)
        self.profile = []
        resident = 0
        for j, (kind, index) in enumerate(self.steps):
            resident += diff[j]
            self.profile.append(resident + (self.alloc[index] if kind == "op"
                                            else self.size[index]))


def _identity(x):
    return x


class _TickEvent:
    """A CUDA event's stand-in on CPU (tests): done after `delay` queries."""

    def __init__(self, delay):
        self.left = delay

    def query(self):
        self.left -= 1
        return self.left <= 0

    def synchronize(self):
        self.left = 0


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


class Runtime:
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

    def _rng_state(self, leaves):
        """The generator states a random op draws from: the CPU's, and that of
        the CUDA device of its first CUDA tensor (if any)."""
        device = next((x.device for x in leaves if isinstance(x, torch.Tensor) and x.is_cuda),
                      None)
        if device is None:
            for x in leaves:  # a factory (rand, randn) given its device
                if isinstance(x, torch.device) and x.type == "cuda":
                    device = x
        cuda = (device, torch.cuda.get_rng_state(device)) if device is not None else None
        return torch.get_rng_state(), cuda

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

    # ----- rebuilds -----

    def _rebuild(self, tid):
        self._hold(tid, self._replay_tensor(tid, on_demand=False))

    def _replay_tensor(self, tid, on_demand):
        s = self.s
        flow = self.flow
        sid = self._tid_sid.get(tid)
        if sid is None:
            raise MismatchError(f"saved tensor {tid} ({s.names_t[tid]}) was never produced")

        def is_leaf(x, v):
            u = self._sid_tid.get(x)
            return u is not None and u != tid and self._tid_version[u] == v

        version = self._tid_version[tid]
        ops, leaves = flow.recipe(sid, version, is_leaf, writes_after=flow.version)
        if ops is None:
            raise MismatchError(f"saved tensor {tid} ({s.names_t[tid]}) cannot be rebuilt in "
                                f"this step: {leaves}")
        for x in leaves:
            u = self._sid_tid.get(x)
            if u is not None and u not in s.inputs[tid]:
                raise MismatchError(
                    f"saved tensor {tid} ({s.names_t[tid]}): its rebuild reads tensor {u}, "
                    f"which is not among its recompute inputs in the trace")
        # The replay's own copy of each storage it has made or written, and
        # the version that copy holds: a recipe may read one storage at two
        # versions (an old one it rebuilds, a newer one that is resident).
        storages = {}

        def resolve(ref, written):
            if ref.sid is None:
                return torch.empty_strided(ref.size, ref.stride, dtype=ref.dtype,
                                           device=ref.device)
            entry = storages.get(ref.sid)
            if entry is not None and entry[1] == ref.version:
                return ref.view_of(entry[0])
            u = self._sid_tid.get(ref.sid)
            if u is not None and self._tid_version[u] == ref.version:
                base = self._held.get(u)
                if base is None:
                    if not on_demand:
                        raise RuntimeError(
                            f"slackswap runtime: recompute input {u} of tensor {tid} is "
                            "not resident at its rebuild (the plan is inconsistent)")
                    base = self._on_demand(u)
                if self._cuda and u in self._ready_event:
                    torch.cuda.current_stream().wait_event(self._ready_event[u])
                copy = written
            elif flow.writers[ref.sid][0] < 0 and ref.sid in flow.external_objects:
                base = storage_base(flow.external_objects[ref.sid])
                # Buffers (running statistics) are written by some ops
                # without their schema saying so: replay into a copy.
                copy = written or not flow.external_objects[ref.sid].requires_grad
            else:
                raise RuntimeError(f"slackswap runtime: the rebuild of tensor {tid} reads "
                                   f"version {ref.version} of a storage it has no copy of")
            if copy:
                base = base.clone()
                storages[ref.sid] = [base, ref.version]
            return ref.view_of(base)

        self._internal = True
        rng = torch.get_rng_state()
        cuda_devices = {rec.rng[1][0] for rec in (flow.ops[w] for w in ops)
                        if rec.rng is not None and rec.rng[1] is not None}
        cuda_rng = {d: torch.cuda.get_rng_state(d) for d in cuda_devices}
        try:
            with torch.no_grad():
                for w in ops:
                    rec = flow.ops[w]
                    written = set(rec.writes)
                    leaves_now = [resolve(x, x.sid in written) if isinstance(x, TensorRef)
                                  else x for x in rec.leaves]
                    args, kwargs = unflatten_call(leaves_now, rec.spec)
                    if rec.rng is not None:
                        self._set_rng(rec.rng)
                    out = rec.func(*args, **kwargs)
                    outs = flatten_outputs(out)
                    for j, x in enumerate(rec.outputs):
                        if x is not None and x in rec.new:
                            storages[x] = [storage_base(outs[j]), 0]
                    for x in written:
                        if x in storages:
                            storages[x][1] = flow.writers[x].index(w)
        finally:
            torch.set_rng_state(rng)
            for d, state in cuda_rng.items():
                torch.cuda.set_rng_state(state, d)
            self._internal = False
        result = storages.get(sid)
        if result is None or result[1] != version or \
                result[0].numel() * result[0].element_size() != s.size[tid]:
            raise RuntimeError(f"slackswap runtime: the rebuild of tensor {tid} did not make it")
        return result[0]

    def _set_rng(self, state):
        cpu, cuda = state
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state(cuda[1], cuda[0])

    def _on_demand(self, tid):
        """A tensor the schedule did not bring back (after a mismatch)."""
        s = self.s
        if s.decision[tid] == "swap":
            if tid not in self._offloaded:
                base = self._held.get(tid)
                if base is not None:
                    return base
                raise RuntimeError(f"slackswap runtime: tensor {tid} was let go before its "
                                   "copy to host")
            return self._copy_in(tid)
        base = self._replay_tensor(tid, on_demand=True)
        return base
