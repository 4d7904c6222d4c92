"""Profiles one training step of a torch.nn.Module into a slackswap.v1 Trace.

What is recorded, and how:

- Operators: every ATen operator the step runs, in execution order, through a
  TorchDispatchMode (below autograd, so forward and backward ops alike). Ops
  that only make views (no new storage, no work) are left out. Phase: forward
  until the loss is computed, backward during loss.backward(). The dataflow
  (storages, versions, writers) is recorded by `recording.Dataflow`, the same
  log the runtime replays.
- Saved tensors: autograd.graph.saved_tensors_hooks. Every tensor autograd
  saves is keyed by its storage, so views and tensors saved twice count once,
  with the storage's size. Parameters and buffers are not activations and are
  skipped. The producer is the op that wrote the version backward reads (the
  storage's last writer in forward: an in-place ReLU, `y += h`, the div_ that
  scales a dropout mask, the last gate an LSTM writes into its gates buffer),
  not the op that allocated it. Inputs
  created before the step get a synthetic "input" op at the start and are
  kept (neither swapped nor recomputed: the caller holds them, so a copy to
  host would free nothing), and counted at the bytes their saved views span:
  a batch sliced from a larger dataset tensor counts as the slice. Forward uses are the ops after the producer that read the
  storage; backward uses are the ops that run right after autograd unpacks it.
  Each tensor also carries its dtype and which output of its producer it is
  (`producer_output`), which the runtime matches.
- Blocks: the modules named by `blocks=`, else the repeated layers (the
  non-leaf module class with the most instances, outermost on a tie: the
  transformer layers, ResNet's bottlenecks), else the model's direct
  children; block i + 1 for the i-th of them (registration order for the
  default), 0 outside them. A backward op
  takes the block of the saved tensors it reads, else that of the next
  backward op that reads some.
- Recompute: a recipe (recording.Dataflow.recipe): the writers of the saved
  version, back to saved tensors at their saved version (the recompute
  inputs) and to data from before the step that the step never modified
  (parameters). Random ops are replayable: the runtime restores the
  random-number state. A recipe longer than 64 ops, one that needs a version
  the step overwrote, or one through an op with its own generator, cannot be
  rebuilt. The cost is the recipe's ops' durations.
- torch.utils.checkpoint inside the step is refused (ProfileError): it hides
  the tensors the plan is meant to decide on.
- Durations: "measured" (wall clock around each op, synchronized on CUDA), or
  "modelled" for a hardware preset from each op's FLOPs and bytes, the same
  roofline as the workload generator, so a CPU run can stand in for a GPU one.
- Offload traffic: with `offload=`, the fixed transfers of ZeRO-Offload, ZeRO
  with delayed parameter update or FSDP CPU offload, per unit (the blocks, or
  `offload_units=`) from its own parameters; see the `offload` module. Each op
  records the unit it ran in as it records its block.
"""
import collections
import math
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from . import stubs
from .hardware import HARDWARE_PRESETS, preset
from .offload import FORWARD, UnitError, absorb, add_offload_traffic, offload_mode
from .recording import (GRAD_BUFFER_OPS, VIEW_OPS, Dataflow, op_name, storage_key,
                        storage_nbytes)


class ProfileError(RuntimeError):
    pass


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


def _kind(name):
    for kind, keys in _KINDS:
        if any(k in name for k in keys):
            return kind
    return "ELEMENTWISE"


def _tensors(tree):
    return [x for x in tree_flatten(tree)[0] if isinstance(x, torch.Tensor)]


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


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


def passthrough_view(func, args, kwargs):
    """Runs a view op. PyTorch 1.13 under a dispatch mode returns a Python
    number when it detaches a saved wrapped number (the 2.0 of x / 2.0);
    autograd needs a tensor, and the wrapped number itself has no history."""
    out = func(*args, **kwargs)
    if isinstance(out, (bool, int, float, complex)) and args and isinstance(args[0], torch.Tensor):
        out = args[0]
    return out


class _Op:
    __slots__ = ("name", "phase", "block", "unit", "flops", "bytes", "ns")


class _Recorder(TorchDispatchMode):
    def __init__(self, profiler):
        super().__init__()
        self.p = profiler

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = op_name(func)
        if name in VIEW_OPS:
            return passthrough_view(func, args, kwargs)
        p = self.p
        if p.phase == "BACKWARD":
            if name in GRAD_BUFFER_OPS:
                return p.flow.grad_buffer(func, args, kwargs)
            if p.flow.accumulates(func, args, kwargs):
                return func(*args, **kwargs)

        def run():
            if p.measured and p.cuda:
                torch.cuda.synchronize()
            start = time.perf_counter_ns()
            result = func(*args, **kwargs)
            if p.measured and p.cuda:
                torch.cuda.synchronize()
            return result, time.perf_counter_ns() - start

        rec, out = p.flow.record(func, args, kwargs, run)
        p.record(rec, name, args, kwargs, out)
        return out


class _Profiler:
    def __init__(self, model, timing, hardware):
        self.measured = timing == "measured"
        self.rates = preset(hardware) if not self.measured else None
        self.cuda = False
        self.phase = "FORWARD"
        self.block = 0
        self.unit = 0  # 1 + the index of the offload unit running, 0: none
        self.ops = []
        self.flow = Dataflow()
        self.uses = collections.defaultdict(list)  # sid -> op indices that read it
        self.saved = {}  # sid -> dtype when first saved (activations only)
        self.extent = {}  # sid from before the step -> (first, end) byte its saved views span
        self.forward_version = None  # per sid, at the end of forward
        self.pending_unpacks = []
        self.params = {storage_key(t) for t in list(model.parameters()) + list(model.buffers())}

    def record(self, rec, name, args, kwargs, out):
        index = rec.index
        inputs = _tensors((args, kwargs))
        outputs = _tensors(out)
        op = _Op()
        op.name = name
        op.phase = self.phase
        op.flops = _flops(name, args, out)
        op.bytes = sum(t.numel() * t.element_size() for t in inputs + outputs)
        if self.measured:
            op.ns = int(rec.elapsed_ns)
        else:
            seconds = max(op.flops / self.rates["matmul"], op.bytes / self.rates["hbm"])
            op.ns = int(math.ceil(seconds * 1e9))
        if self.phase == "FORWARD":
            op.block, op.unit = self.block, self.unit
            for sid in set(rec.reads):
                self.uses[sid].append(index)
        else:
            reads = self.pending_unpacks
            self.pending_unpacks = []
            for sid in reads:
                self.uses[sid].append(index)
            made = [self.producer(i) for i in reads if self.producer(i) >= 0]
            # Settled in finish_blocks() when None. The unit is the latest
            # producer's: a layer's first LayerNorm saves the previous
            # layer's output beside its own statistics.
            op.block = self.ops[made[0]].block if made else None
            op.unit = self.ops[max(made)].unit if made else None
        self.ops.append(op)

    def end_forward(self):
        self.phase = "BACKWARD"
        self.forward_version = list(self.flow.version)
        if any(op.unit for op in self.ops):
            # Settled before backward, whose ops take their producers' units.
            for op, unit in zip(self.ops, absorb([op.unit for op in self.ops],
                                                 [FORWARD] * len(self.ops))):
                op.unit = unit

    def version(self, sid):
        """The version backward reads: the last one forward wrote. (A storage
        can be saved and then written elsewhere, as the LSTM's gates are
        chunk by chunk; autograd only forbids writes to the saved part.)"""
        return self.forward_version[sid] if sid < len(self.forward_version) else \
            self.flow.version[sid]

    def producer(self, sid):
        """The op that wrote that version (-1: data from before the step)."""
        return self.flow.writers[sid][self.version(sid)]

    def finish_blocks(self):
        """A backward op that reads no saved tensor (a gradient sum, a copy)
        belongs to the block (and unit) of the next one that does: autograd
        runs it on the way into that block's backward."""
        block = unit = 0
        for op in reversed(self.ops):
            if op.phase != "BACKWARD":
                break
            block = op.block = block if op.block is None else op.block
            unit = op.unit = unit if op.unit is None else op.unit

    def pack(self, t):
        if self.phase != "FORWARD":
            raise ProfileError("a tensor was saved during backward (double backward is not "
                               "supported)")
        self.cuda = self.cuda or t.is_cuda
        if storage_nbytes(t) == 0:
            return (None, t)
        # Autograd saves an op's inputs before the op runs: a storage from
        # before the step may be seen here first. Registering it here, as the
        # runtime does, numbers the external storages the same way.
        sid = self.flow.sid_of_input(t)
        if storage_key(t) in self.params:
            return (None, t)
        if sid not in self.saved:
            self.saved[sid] = t.dtype
        if self.flow.writers[sid][0] < 0 and t.numel() > 0:
            # From before the step: the bytes its saved views span (a batch
            # sliced from a dataset tensor is the slice, not the dataset).
            first = t.storage_offset()
            last = first + sum((n - 1) * abs(st) for n, st in zip(t.shape, t.stride()))
            size = t.element_size()
            lo, hi = self.extent.get(sid, (first * size, (last + 1) * size))
            self.extent[sid] = (min(lo, first * size), max(hi, (last + 1) * size))
        return (sid, t)

    def unpack(self, handle):
        sid, t = handle
        if sid is not None:
            self.pending_unpacks.append(sid)
        return t

    def to_trace(self, name):
        stubs.load()
        from slackswap.v1 import trace_pb2
        flow = self.flow
        trace = trace_pb2.Trace(name=name[:256])
        # Saved but never read in backward: not an activation the plan manages.
        order = [s for s in sorted(self.saved)
                 if any(self.ops[u].phase == "BACKWARD" for u in self.uses[s])]
        position = {s: k for k, s in enumerate(order)}
        shift = 1 if any(self.producer(s) < 0 for s in order) else 0
        if shift:
            trace.operators.add(name="input", phase=trace_pb2.PHASE_FORWARD,
                                kind=trace_pb2.OP_KIND_OTHER, duration_ns=0, block_index=0)
        for op in self.ops:
            trace.operators.add(
                name=op.name, phase=getattr(trace_pb2, "PHASE_" + op.phase),
                kind=getattr(trace_pb2, "OP_KIND_" + _kind(op.name)), duration_ns=op.ns,
                block_index=op.block, flops=int(op.flops), memory_traffic_bytes=int(op.bytes))

        def is_leaf(s, v):
            return s in position and self.version(s) == v

        for s in order:
            producer = self.producer(s)
            size = flow.nbytes[s]
            if producer < 0 and s in self.extent:
                size = self.extent[s][1] - self.extent[s][0]
            t = trace.tensors.add(name=f"saved{position[s]}", size_bytes=size,
                                  dtype=dtype_name(self.saved[s]))
            t.use_ops.extend(sorted({u + shift for u in self.uses[s] if u > producer}))
            if producer < 0:
                # The caller holds its inputs (and autograd the scalars it
                # wraps): a copy to host would free nothing. Kept.
                t.producer_op = 0
                t.producer_output = flow.external_rank[s]
                t.swap_forbidden = True
                t.recompute_forbidden = True
                continue
            t.producer_op = producer + shift
            rec = flow.ops[producer]
            t.producer_output = (rec.outputs.index(s) if s in rec.outputs
                                 else -1 - rec.writes.index(s))
            ops, leaves = flow.recipe(s, self.version(s), is_leaf, writes_after=flow.version)
            if ops is None or any(self.ops[w].phase != "FORWARD" for w in ops):
                t.recompute_forbidden = True
                continue
            t.recompute_duration_ns = sum(self.ops[w].ns for w in ops)
            t.recompute_inputs.extend(sorted(position[j] for j in leaves if j in position))
        return trace

    def add_offload_traffic(self, trace, mode, model, units):
        """Appends to `trace` (made by to_trace) the fixed transfers of `mode`
        for `units`, the modules whose forward passes set self.unit."""
        shift = len(trace.operators) - len(self.ops)
        first = {}
        for rec in self.flow.ops:
            for sid in rec.reads:
                first.setdefault(sid, rec.index + shift)
        first_reads = {key: first[sid] for key, sid in self.flow.key_to_sid.items()
                       if self.flow.external_rank[sid] >= 0 and sid in first}
        unit_of_op = [0] * shift + [op.unit for op in self.ops]
        try:
            add_offload_traffic(trace, mode, model, units, unit_of_op, first_reads)
        except UnitError as e:
            raise ProfileError(str(e)) from None


def _track(p, attr, modules):
    """Forward hooks that set p.<attr> to 1 + the module's index in `modules`
    while its forward runs (the innermost one when they nest), 0 outside."""
    handles, stack = [], []
    for index, module in enumerate(modules):
        def enter(module, args, value=index + 1):
            stack.append(getattr(p, attr))
            setattr(p, attr, value)

        def leave(module, args, output):
            setattr(p, attr, stack.pop() if stack else 0)
        handles.append(module.register_forward_pre_hook(enter))
        handles.append(module.register_forward_hook(leave))
    return handles


def _gradient_hooks(p, units):
    """Hooks on the units' parameters that give the op making a gradient the
    unit of its parameter (the innermost unit holding it) when the saved
    tensors it reads did not: a first layer's weight gradient reads only the
    step's input."""
    owner = {}
    for k, module in sorted(enumerate(units), key=lambda e: -sum(1 for _ in e[1].modules())):
        for param in module.parameters():
            owner[id(param)] = k + 1  # smaller units later: the innermost wins
    handles = []
    for param in {id(q): q for m in units for q in m.parameters()}.values():
        if param.requires_grad:
            def on_gradient(grad, unit=owner[id(param)]):
                if p.ops and p.ops[-1].phase == "BACKWARD" and p.ops[-1].unit is None:
                    p.ops[-1].unit = unit
            handles.append(param.register_hook(on_gradient))
    return handles


def _offload_units(mode, offload_units, block_modules):
    """The modules whose parameters the offload traffic moves, or None."""
    if mode is None:
        if offload_units is not None:
            raise ValueError("offload_units: given without an offload mode")
        return None
    units = block_modules if offload_units is None else list(offload_units)
    if not units:
        raise ValueError("offload_units: no units (the model has no blocks): name the modules")
    if not all(isinstance(m, torch.nn.Module) for m in units):
        raise TypeError("offload_units: a list of torch.nn.Module")
    if len({id(m) for m in units}) != len(units):
        raise ValueError("offload_units: a module is listed twice")
    return units


def _block_modules(model, blocks):
    """The modules whose forward passes are blocks 1, 2, ... (see the module doc)."""
    if blocks is not None:
        return list(blocks)
    by_class = collections.defaultdict(list)
    depth = {}

    def walk(module, d):
        for child in module.children():
            if any(True for _ in child.children()):
                by_class[type(child)].append(child)
                depth.setdefault(type(child), d)
            walk(child, d + 1)

    walk(model, 0)
    repeated = [(len(mods), -depth[cls], mods) for cls, mods in by_class.items() if len(mods) > 1]
    if repeated:
        return max(repeated, key=lambda r: (r[0], r[1]))[2]
    return list(model.children())


class _NoCheckpoint:
    """Refuses torch.utils.checkpoint inside the profiled step."""

    def __enter__(self):
        import torch.utils.checkpoint as cp
        self.cp = cp
        self.saved = {}

        def refuse(*args, **kwargs):
            raise ProfileError(
                "the step uses torch.utils.checkpoint: its recomputation hides the tensors "
                "the plan decides on (and the reentrant form saves none). Profile and run the "
                "model without it; the plan chooses what to recompute")

        for owner, attr in ((cp.CheckpointFunction, "forward"),
                            (cp, "_checkpoint_without_reentrant")):
            if hasattr(owner, attr):
                self.saved[(owner, attr)] = owner.__dict__.get(attr, getattr(owner, attr))
                setattr(owner, attr, staticmethod(refuse) if owner is cp.CheckpointFunction
                        else refuse)
        return self

    def __exit__(self, *exc):
        for (owner, attr), value in self.saved.items():
            setattr(owner, attr, value)


def profile(model, inputs, loss_fn, timing="modelled", hardware="a100", name=None, blocks=None,
            offload=None, offload_units=None):
    """Runs one training step (forward, loss, backward) of `model` on `inputs`
    (a tuple of positional arguments, or one tensor) and returns it as a
    slackswap.v1.Trace. It is a real step: batch-norm running statistics and
    the random-number generators advance as in any step (save and restore
    them around it if that matters), and gradients are left in the
    parameters.

    loss_fn(output) -> scalar tensor. timing: "measured" (wall clock on the
    device the step runs on) or "modelled" (from FLOPs and bytes for the
    `hardware` preset, case-insensitive). blocks: the modules that are the
    trace's blocks (default: the repeated layers).

    offload: the traffic the job moves over the host link itself, added as
    the trace's fixed transfers, as the workload generator's --offload does
    (docs/workloads.md, "Offload modes"): None or "none" (nothing), "zero"
    (ZeRO-Offload: each unit's gradients to the host after its last backward
    op, its updated parameters back after the step's last op), "zero-dpu"
    (delayed parameter update: the parameters arrive before the unit's first
    forward op instead) or "fsdp-cpu" (FSDP with CPU offload: each unit's
    parameters fetched before its forward and again before its backward,
    prefetched one unit ahead and held while it runs, its gradients as
    "zero"). Any other value: ValueError naming `offload`. offload_units: the
    modules that are the units, e.g. the FSDP-wrapped ones (default: the
    trace's blocks); each moves its own parameters, counted once (tied
    weights), and those outside every unit go with the unit of the first op
    that reads them: the embedding with the first unit, the head with the
    last. A unit that runs no forward or no backward op: ProfileError.
    """
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)  # one tensor: the model's one argument
    elif isinstance(inputs, list):
        inputs = tuple(inputs)
    elif not isinstance(inputs, tuple):
        raise TypeError(f"inputs: a tuple of the model's positional arguments (or one tensor), "
                        f"not {type(inputs).__name__}")
    if timing not in ("measured", "modelled"):
        raise ValueError("timing must be 'measured' or 'modelled'")
    if timing == "modelled":
        preset(hardware)  # a clear error for an unknown name
    mode = offload_mode(offload)
    block_modules = _block_modules(model, blocks)
    units = _offload_units(mode, offload_units, block_modules)
    p = _Profiler(model, timing, hardware)
    handles = _track(p, "block", block_modules)
    if units is not None:
        handles += _track(p, "unit", units) + _gradient_hooks(p, units)
    try:
        with _NoCheckpoint():
            with torch.autograd.graph.saved_tensors_hooks(p.pack, p.unpack):
                with _Recorder(p):
                    output = model(*inputs)
                    loss = loss_fn(output)
                    p.end_forward()
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
    if mode is not None:
        p.add_offload_traffic(trace, mode, model, units)
    return trace
