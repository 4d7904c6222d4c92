"""Profiles one training step of a torch.nn.Module into a slackswap.v1 Trace.

What is recorded, and how:

- Operators: every ATen operator the step runs, in execution order, through a
  TorchDispatchMode (below autograd, so forward and backward ops alike). Ops
  that only make views (no new storage, no work) are left out. Phase: forward
  until the loss is computed, backward during loss.backward().
- Saved tensors: autograd.graph.saved_tensors_hooks. Every tensor autograd
  saves is keyed by its storage, so views and tensors saved twice count once,
  with the storage's size. Parameters and buffers are not activations and are
  skipped. The producer is the op that created the storage (inputs created
  before the step get a synthetic "input" op at the start, and cannot be
  recomputed); forward uses are the ops that read the storage; backward uses
  are the ops that run right after autograd unpacks it.
- Blocks: the top-level child module running a forward op (block i + 1 for
  child i; 0 outside them); a backward op takes the block of the saved tensors
  it reads, else that of the next backward op that reads some.
- Recompute: rerun the producer; if it read tensors that were not saved (and are
  not parameters), rerun their producers too, back to saved tensors (the
  recompute inputs). A chain that reaches data created before the step, or is
  longer than 64 ops, cannot be rebuilt.
- Durations: "measured" (wall clock around each op, synchronized on CUDA), or
  "modelled" for a hardware preset from each op's FLOPs and bytes, the same
  roofline as the workload generator, so a CPU run can stand in for a GPU one.
"""
import math
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from . import stubs
from .hardware import HARDWARE_PRESETS


class ProfileError(RuntimeError):
    pass


# Ops that return views or metadata only: no new storage, no kernel worth timing.
_VIEW_OPS = {
    "view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "squeeze",
    "unsqueeze", "slice", "select", "split", "split_with_sizes", "chunk", "unbind", "detach",
    "alias", "as_strided", "narrow", "lift_fresh", "_reshape_alias", "unflatten", "flatten",
}

_KINDS = [
    ("MATMUL", ("mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "addbmm")),
    ("CONV", ("convolution", "convolution_backward", "cudnn_convolution", "mkldnn_convolution")),
    ("ATTENTION", ("scaled_dot_product", "_flash_attention", "_efficient_attention")),
    ("NORMALIZATION", ("layer_norm", "batch_norm", "group_norm", "rms_norm")),
    ("DROPOUT", ("dropout", "bernoulli")),
    ("POOLING", ("pool",)),
    ("EMBEDDING", ("embedding",)),
    ("LOSS", ("nll_loss", "cross_entropy", "mse_loss", "log_softmax")),
]

_MAX_REBUILD_OPS = 64


def _kind(name):
    for kind, keys in _KINDS:
        if any(k in name for k in keys):
            return kind
    return "ELEMENTWISE"


def _storage_key(t):
    return t.storage().data_ptr(), t.device


def _nbytes(t):
    return t.storage().nbytes()


def _tensors(tree):
    return [x for x in tree_flatten(tree)[0] if isinstance(x, torch.Tensor)]


def _flops(name, args, out):
    """FLOPs of the common heavy ops (2 per multiply-add); elementwise: output size."""
    outs = _tensors(out)
    try:
        if name in ("mm", "addmm"):
            a, b = (args[0], args[1]) if name == "mm" else (args[1], args[2])
            return 2 * a.shape[0] * a.shape[1] * b.shape[1]
        if name in ("bmm", "baddbmm"):
            a, b = (args[0], args[1]) if name == "bmm" else (args[1], args[2])
            return 2 * a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]
        if name == "convolution":
            weight = args[1]
            return 2 * outs[0].numel() * weight.shape[1] * math.prod(weight.shape[2:])
        if name == "convolution_backward":
            grad, weight = args[0], args[2]
            return 4 * grad.numel() * weight.shape[1] * math.prod(weight.shape[2:])
    except (AttributeError, IndexError, TypeError):
        pass
    return sum(o.numel() for o in outs)


class _Op:
    __slots__ = ("name", "phase", "block", "flops", "bytes", "ns", "inputs", "outputs")


class _Recorder(TorchDispatchMode):
    def __init__(self, profiler):
        super().__init__()
        self.p = profiler

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__.rstrip("_")
        p = self.p
        if name in _VIEW_OPS:
            out = func(*args, **kwargs)
            # PyTorch 1.13 under a dispatch mode returns a Python number when it
            # detaches a saved wrapped number (the 2.0 of x / 2.0); autograd
            # needs a tensor, and the wrapped number itself has no history.
            if isinstance(out, (bool, int, float, complex)) and args and isinstance(args[0], torch.Tensor):
                out = args[0]
            return out
        inputs = _tensors((args, kwargs))
        if p.measured and p.cuda:
            torch.cuda.synchronize()
        start = time.perf_counter_ns()
        out = func(*args, **kwargs)
        if p.measured and p.cuda:
            torch.cuda.synchronize()
        elapsed = time.perf_counter_ns() - start
        p.record(name, args, inputs, _tensors(out), out, elapsed)
        return out


class _Profiler:
    def __init__(self, model, timing, hardware):
        self.measured = timing == "measured"
        self.rates = HARDWARE_PRESETS[hardware] if not self.measured else None
        self.cuda = False
        self.phase = "FORWARD"
        self.block = 0
        self.ops = []
        # storage key -> id, and per id: producer op, size, device
        self.storage_id = {}
        self.producer = []
        self.size = []
        self.external = []  # created before the step
        self.uses = []  # per id: list of op indices that read it
        self.saved = {}  # id -> True for saved activations
        self.pending_unpacks = []
        self.params = {_storage_key(t) for t in list(model.parameters()) + list(model.buffers())}

    def _id_for_input(self, t):
        key = _storage_key(t)
        if key not in self.storage_id:
            self.storage_id[key] = len(self.producer)
            self.producer.append(-1)
            self.size.append(_nbytes(t))
            self.external.append(True)
            self.uses.append([])
        return self.storage_id[key]

    def record(self, name, args, inputs, outputs, out, elapsed_ns):
        index = len(self.ops)
        in_ids = []
        for t in inputs:
            if _storage_key(t) in self.params:
                continue
            in_ids.append(self._id_for_input(t))
        in_keys = {_storage_key(t) for t in inputs}
        out_ids = []
        for t in outputs:
            key = _storage_key(t)
            if key in in_keys and key in self.storage_id:  # in place, or a view
                out_ids.append(self.storage_id[key])
                continue
            # A new storage (the allocator may reuse an address: a new id).
            self.storage_id[key] = len(self.producer)
            self.producer.append(index)
            self.size.append(_nbytes(t))
            self.external.append(False)
            self.uses.append([])
            out_ids.append(self.storage_id[key])
        op = _Op()
        op.name = name
        op.phase = self.phase
        op.inputs = sorted(set(in_ids))
        op.outputs = sorted(set(out_ids))
        op.flops = _flops(name, args, out)
        op.bytes = sum(t.numel() * t.element_size() for t in inputs + outputs)
        if self.measured:
            op.ns = int(elapsed_ns)
        else:
            seconds = max(op.flops / self.rates["matmul"], op.bytes / self.rates["hbm"])
            op.ns = int(math.ceil(seconds * 1e9))
        if self.phase == "FORWARD":
            op.block = self.block
            for i in op.inputs:
                self.uses[i].append(index)
        else:
            reads = self.pending_unpacks
            self.pending_unpacks = []
            for i in reads:
                self.uses[i].append(index)
            blocks = [self.ops[self.producer[i]].block for i in reads if self.producer[i] >= 0]
            op.block = blocks[0] if blocks else None  # settled in finish_blocks()
        self.ops.append(op)

    def finish_blocks(self):
        """A backward op that reads no saved tensor (a gradient sum, a copy)
        belongs to the block of the next one that does: autograd runs it on
        the way into that block's backward."""
        following = 0
        for op in reversed(self.ops):
            if op.phase != "BACKWARD":
                break
            if op.block is None:
                op.block = following
            following = op.block

    def pack(self, t):
        if _storage_key(t) in self.params:
            return (None, t)
        self.cuda = self.cuda or t.is_cuda
        i = self._id_for_input(t)
        self.saved[i] = True
        return (i, t)

    def unpack(self, handle):
        i, t = handle
        if i is not None:
            self.pending_unpacks.append(i)
        return t

    def rebuild(self, tensor_id):
        """(recompute ns, saved inputs) of rebuilding a saved tensor, or None."""
        cost, inputs, seen = 0, set(), set()
        stack = [self.producer[tensor_id]]
        while stack:
            op_index = stack.pop()
            if op_index in seen:
                continue
            seen.add(op_index)
            if len(seen) > _MAX_REBUILD_OPS:
                return None
            op = self.ops[op_index]
            cost += op.ns
            for i in op.inputs:
                if i == tensor_id:
                    continue
                if self.saved.get(i):
                    inputs.add(i)
                elif self.external[i] or self.producer[i] < 0:
                    return None  # data from before the step, not saved
                else:
                    stack.append(self.producer[i])
        return cost, inputs

    def to_trace(self, name):
        stubs.load()
        from slackswap.v1 import trace_pb2
        trace = trace_pb2.Trace(name=name[:256])
        shift = 1 if any(self.external[i] for i in self.saved) else 0
        if shift:
            trace.operators.add(name="input", phase=trace_pb2.PHASE_FORWARD,
                                kind=trace_pb2.OP_KIND_OTHER, duration_ns=0, block_index=0)
        for op in self.ops:
            trace.operators.add(
                name=op.name, phase=getattr(trace_pb2, "PHASE_" + op.phase),
                kind=getattr(trace_pb2, "OP_KIND_" + _kind(op.name)), duration_ns=op.ns,
                block_index=op.block, flops=int(op.flops), memory_traffic_bytes=int(op.bytes))
        # Saved but never read in backward: not an activation the plan manages.
        order = [i for i in sorted(self.saved)
                 if any(self.ops[u].phase == "BACKWARD" for u in self.uses[i])]
        position = {i: k for k, i in enumerate(order)}
        for i in order:
            t = trace.tensors.add(name=f"saved{position[i]}", size_bytes=self.size[i])
            t.producer_op = 0 if self.external[i] else self.producer[i] + shift
            t.use_ops.extend(sorted({u + shift for u in self.uses[i]}))
            rebuild = None if self.external[i] else self.rebuild(i)
            if rebuild is None:
                t.recompute_forbidden = True
            else:
                cost, inputs = rebuild
                t.recompute_duration_ns = cost
                t.recompute_inputs.extend(sorted(position[j] for j in inputs if j in position))
                if any(j not in position for j in inputs):
                    t.recompute_forbidden = True
        return trace


def profile(model, inputs, loss_fn, timing="modelled", hardware="a100", name=None):
    """Runs one training step (forward, loss, backward) of `model` on `inputs`
    (a tuple of positional arguments) and returns it as a slackswap.v1.Trace.

    loss_fn(output) -> scalar tensor. timing: "measured" (wall clock on the
    device the step runs on) or "modelled" (from FLOPs and bytes for the
    `hardware` preset). Gradients are left in the parameters, as after any
    backward pass.
    """
    if timing not in ("measured", "modelled"):
        raise ValueError("timing must be 'measured' or 'modelled'")
    if timing == "modelled" and hardware not in HARDWARE_PRESETS:
        raise ValueError(f"unknown hardware preset {hardware!r}; valid: "
                         f"{', '.join(HARDWARE_PRESETS)}")
    p = _Profiler(model, timing, hardware)
    children = list(model.children())
    handles = []
    for index, child in enumerate(children):
        def enter(module, args, block=index + 1):
            p.block = block
        def leave(module, args, output):
            p.block = 0
        handles.append(child.register_forward_pre_hook(enter))
        handles.append(child.register_forward_hook(leave))
    try:
        with torch.autograd.graph.saved_tensors_hooks(p.pack, p.unpack):
            with _Recorder(p):
                output = model(*inputs)
                loss = loss_fn(output)
                p.phase = "BACKWARD"
                loss.backward()
    finally:
        for h in handles:
            h.remove()
    if not p.saved:
        raise ProfileError("the step saved no activations for backward")
    p.finish_blocks()
    trace = p.to_trace(name or type(model).__name__)
    if not trace.tensors:
        raise ProfileError("no saved activation was read in backward")
    return trace
