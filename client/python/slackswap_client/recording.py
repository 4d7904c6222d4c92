"""The dataflow of one training step, op by op: shared by the profiler (which
turns it into a trace) and the runtime (which replays parts of it to rebuild
dropped tensors).

What is recorded for every ATen operator the step runs (below autograd, so
forward and backward alike; ops that only make views are left out):

- its inputs and outputs as references to storages (a storage id, the version
  of the storage the op read, and the view: size, stride, offset, dtype), not
  the tensors themselves, so the log holds no activation;
- which storages it writes (in-place ops, `out=`; from the operator's schema)
  and the new versions it makes; the op that made each version is its writer;
- the random-number state before it, for the ops that draw random numbers, so
  a replay draws the same numbers.

In backward, ops that add into an existing .grad, or that make a first .grad
and copy into it, are not counted (see Dataflow.accumulates and
Dataflow.grad_buffer).

Storages that exist before the step (parameters, buffers, the inputs) are
"external", numbered in the order they are first seen.

A *recipe* rebuilds one version of a storage: the writers that made it, back to
leaves that the replay can read. A leaf is a saved tensor of the trace at its
saved version (resident when the rebuild runs: a recompute input), or an
external storage that the step never wrote. Anything else (a version that
a later write destroyed, an external storage the step modified) makes the
tensor impossible to rebuild.
"""
import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

# Ops that return views or metadata only: no new storage, no kernel worth timing.
VIEW_OPS = frozenset({
    "view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "squeeze",
    "unsqueeze", "slice", "select", "split", "split_with_sizes", "chunk", "unbind", "detach",
    "alias", "as_strided", "narrow", "lift_fresh", "_reshape_alias", "unflatten", "flatten",
    "view_as_real", "view_as_complex", "diagonal", "expand_as", "view_as", "unfold",
})

# Ops that draw from the default random-number generator.
RANDOM_OPS = frozenset({
    "bernoulli", "native_dropout", "rand", "rand_like", "randn", "randn_like", "randint",
    "randint_like", "randperm", "normal", "uniform", "exponential", "geometric", "cauchy",
    "log_normal", "multinomial", "dropout", "feature_dropout", "alpha_dropout",
    "feature_alpha_dropout", "_fused_dropout", "fused_dropout", "rrelu_with_noise", "rrelu",
    "poisson", "random", "_standard_gamma", "binomial", "_sample_dirichlet",
})

MAX_RECIPE_OPS = 64

# Ops that make a parameter's first gradient in backward. When .grad is None
# and the incoming gradient's layout differs from the parameter's (a Conv2d
# fed a permuted input: ConvNeXt), autograd's AccumulateGrad makes .grad with
# new_empty_strided and copies the gradient into it; when .grad is present it
# adds in place instead. Neither the profiler nor the runtime counts them
# (Dataflow.grad_buffer), so a step matches its trace with or without
# gradients from an earlier micro-batch.
GRAD_BUFFER_OPS = frozenset({"new_empty_strided"})


_NAMES = {}


def op_name(func):
    name = _NAMES.get(func)
    if name is None:
        name = _NAMES[func] = func.overloadpacket.__name__.rstrip("_")
    return name


if hasattr(torch.Tensor, "untyped_storage"):  # PyTorch 2
    def untyped_storage(t):
        return t.untyped_storage()
elif hasattr(torch.Tensor, "_storage"):  # 1.13: without storage()'s TypedStorage wrapper
    def untyped_storage(t):
        return t._storage()
else:
    def untyped_storage(t):
        return t.storage()


def storage_key(t):
    """A storage's identity: its address, size and device. Some storages are
    made without an operator the mode sees (the scalars autograd wraps), at an
    address a freed storage had; the size tells most of them apart."""
    s = untyped_storage(t)
    return s.data_ptr(), s.nbytes(), t.device


def storage_nbytes(t):
    return untyped_storage(t).nbytes()


def storage_base(t):
    """A 1-D tensor over the whole storage of `t`, in its dtype."""
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.storage())


_SEQUENCES = (list, tuple)
_NESTING = (list, tuple, dict)


def flatten_call(args, kwargs):
    """An op's arguments as (leaves, spec), the leaves in the order of pytree's
    tree_flatten((args, kwargs)); without pytree's cost for the calls most ops
    are: positional values and lists of them one deep, keyword values."""
    leaves = []
    shape = []
    for a in args:
        kind = type(a)
        if kind in _SEQUENCES:
            for x in a:
                if type(x) in _NESTING:
                    return tree_flatten((args, kwargs))
            leaves.extend(a)
            shape.append((kind, len(a)))
        elif kind is dict:
            return tree_flatten((args, kwargs))
        else:
            leaves.append(a)
            shape.append(None)
    for v in kwargs.values():
        if type(v) in _NESTING:
            return tree_flatten((args, kwargs))
    leaves.extend(kwargs.values())
    return leaves, (tuple(shape), tuple(kwargs))


def unflatten_call(leaves, spec):
    """(args, kwargs) from flatten_call's leaves and spec."""
    if not isinstance(spec, tuple):
        return tree_unflatten(leaves, spec)
    shape, keys = spec
    args = []
    i = 0
    for entry in shape:
        if entry is None:
            args.append(leaves[i])
            i += 1
        else:
            kind, n = entry
            args.append(kind(leaves[i:i + n]))
            i += n
    return tuple(args), dict(zip(keys, leaves[i:]))


def flatten_outputs(out):
    """An op's outputs, flat (as tree_flatten(out)[0])."""
    if isinstance(out, torch.Tensor):
        return [out]
    if type(out) in _SEQUENCES and not any(type(x) in _NESTING for x in out):
        return list(out)
    return tree_flatten(out)[0]


class TensorRef:
    """A tensor an op read or wrote, by storage and view; `sid` is None for an
    empty tensor (no storage to track)."""
    __slots__ = ("sid", "version", "size", "stride", "offset", "dtype", "device")

    def __init__(self, sid, version, t):
        self.sid = sid
        self.version = version
        self.size = tuple(t.shape)
        self.stride = tuple(t.stride())
        self.offset = t.storage_offset()
        self.dtype = t.dtype
        self.device = t.device

    def view_of(self, base):
        if base.dtype != self.dtype:
            raise RuntimeError(f"a view of dtype {self.dtype} over a {base.dtype} storage")
        return base.as_strided(self.size, self.stride, self.offset)


class OpRecord:
    __slots__ = ("index", "name", "func", "spec", "leaves", "reads", "writes", "outputs",
                 "new", "rng", "replayable", "elapsed_ns", "out_tensors")

    def argument_refs(self):
        return [x for x in self.leaves if isinstance(x, TensorRef)]


_WRITTEN = {}


def _written_positions(func):
    """Where func's schema marks arguments as written (Tensor(a!)), cached:
    (position or None for keyword-only, name) each."""
    positions = _WRITTEN.get(func)
    if positions is None:
        positions = []
        try:
            arguments = func._schema.arguments
        except AttributeError:
            arguments = ()
        for i, a in enumerate(arguments):
            info = a.alias_info
            if info is not None and info.is_write:
                positions.append((None if a.kwarg_only else i, a.name))
        positions = _WRITTEN[func] = tuple(positions)
    return positions


def _written_arguments(func, args, kwargs):
    """Tensors the schema marks as written (Tensor(a!)): in-place and out= ops."""
    written = []
    for i, name in _written_positions(func):
        value = args[i] if i is not None and i < len(args) else kwargs.get(name)
        if isinstance(value, torch.Tensor):
            written.append(value)
        elif value is not None:
            for x in tree_flatten(value)[0]:
                if isinstance(x, torch.Tensor):
                    written.append(x)
    return written


class Dataflow:
    """Storages, versions and writers of one step, and the log of its ops."""

    def __init__(self, keep_tensors=False):
        self.keep_tensors = keep_tensors  # the profiler keeps outputs for FLOP counts
        self.key_to_sid = {}
        self.version = []      # per sid: current version
        self.writers = []      # per sid: op index that made each version (-1: external)
        self.nbytes = []       # per sid
        self.external_rank = []  # per sid: rank among external storages, or -1
        self.externals = []    # rank -> sid
        self.external_objects = {}  # sid -> a tensor over it (the runtime's replays)
        self.ops = []

    def _new_sid(self, key, t, writer, external):
        sid = len(self.version)
        self.key_to_sid[key] = sid
        self.version.append(0)
        self.writers.append([writer])
        self.nbytes.append(storage_nbytes(t))
        if external:
            self.external_rank.append(len(self.externals))
            self.externals.append(sid)
        else:
            self.external_rank.append(-1)
        return sid

    def sid_of_input(self, t, hold_external=None):
        """The sid of an input, registering external storages on first sight."""
        if storage_nbytes(t) == 0:
            return None
        key = storage_key(t)
        sid = self.key_to_sid.get(key)
        if sid is None:
            sid = self._new_sid(key, t, -1, True)
            if hold_external is not None:
                hold_external(sid, t)
        return sid

    def record(self, func, args, kwargs, run, hold_external=None, rng_state=None):
        """Runs `run()` (the op) and logs it. Returns (record, output)."""
        index = len(self.ops)
        leaves, spec = flatten_call(args, kwargs)
        refs = []
        reads = []
        in_keys = set()
        for i, x in enumerate(leaves):
            if isinstance(x, torch.Tensor):
                sid = self.sid_of_input(x, hold_external)
                if sid is not None:
                    in_keys.add(storage_key(x))
                    reads.append(sid)
                refs.append(TensorRef(sid, self.version[sid] if sid is not None else 0, x))
            else:
                refs.append(x)
        written = _written_arguments(func, args, kwargs)
        name = op_name(func)
        rec = OpRecord()
        rec.index = index
        rec.name = name
        rec.func = func
        rec.spec = spec
        rec.leaves = refs
        rec.reads = reads
        rec.rng = rng_state(leaves) if (rng_state is not None and name in RANDOM_OPS) else None
        rec.replayable = not (name in RANDOM_OPS and kwargs.get("generator") is not None)
        out, elapsed_ns = run()
        rec.elapsed_ns = elapsed_ns
        outs = flatten_outputs(out)
        writes = []
        for t in written:
            if storage_nbytes(t) == 0:
                continue
            sid = self.key_to_sid.get(storage_key(t))
            if sid is not None and sid not in writes:
                writes.append(sid)
        for sid in writes:
            self.version[sid] += 1
            self.writers[sid].append(index)
        out_sids, new = [], []
        for t in outs:
            if not isinstance(t, torch.Tensor) or storage_nbytes(t) == 0:
                out_sids.append(None)
                continue
            key = storage_key(t)
            if key in in_keys:  # in place, or a view of an input
                out_sids.append(self.key_to_sid[key])
                continue
            sid = self._new_sid(key, t, index, False)
            out_sids.append(sid)
            new.append(sid)
        rec.writes = writes
        rec.outputs = out_sids
        rec.new = new
        rec.out_tensors = [t for t in outs if isinstance(t, torch.Tensor)] if self.keep_tensors \
            else None
        self.ops.append(rec)
        return rec, out

    def accumulates(self, func, args, kwargs):
        """True for an op that writes a storage from before the step: in
        backward, autograd adding into an existing .grad (absent when the
        gradients were set to None). Neither the profiler nor the runtime
        counts these, so a step matches its trace either way. Both record
        the storages backward ops make, so an in-place write into one (a
        slice assignment's CopySlices) is counted."""
        for t in _written_arguments(func, args, kwargs):
            if storage_nbytes(t) == 0:
                continue
            sid = self.key_to_sid.get(storage_key(t))
            if sid is None or self.writers[sid][0] < 0:
                return True
        return False

    def grad_buffer(self, func, args, kwargs):
        """Runs a backward op of GRAD_BUFFER_OPS, uncounted: its output is
        registered as a storage from outside the step (writer -1), so that
        the copy into it is accumulation too (`accumulates`)."""
        out = func(*args, **kwargs)
        if isinstance(out, torch.Tensor) and storage_nbytes(out) > 0:
            self._new_sid(storage_key(out), out, -1, False)
        return out

    def writer(self, sid, version):
        return self.writers[sid][version]

    def recipe(self, sid, version, is_leaf, writes_after=None):
        """The ops (sorted log indices) that rebuild `version` of storage `sid`,
        and the leaves they read: (ops, leaf_sids), or (None, reason).

        is_leaf(sid, version) -> True where a resident saved tensor can stand in.
        writes_after: the current version of each storage (an external leaf must
        still be at the version the recipe reads).
        """
        ops, leaves = set(), set()
        stack = [(sid, version)]
        seen = set()
        while stack:
            s, v = stack.pop()
            if (s, v) in seen:
                continue
            seen.add((s, v))
            if (s, v) != (sid, version) and is_leaf(s, v):
                leaves.add(s)
                continue
            w = self.writers[s][v]
            if w < 0:  # external data, never written in the step before this read
                if writes_after is not None and writes_after[s] != v:
                    return None, "reads data from before the step that the step later modified"
                leaves.add(s)
                continue
            if w in ops:
                continue
            rec = self.ops[w]
            if not rec.replayable:
                return None, f"op {rec.name} draws from a generator of its own"
            ops.add(w)
            if len(ops) > MAX_RECIPE_OPS:
                return None, f"needs more than {MAX_RECIPE_OPS} ops"
            needed_writes = {s} if s in rec.writes else set()
            for ref in rec.argument_refs():
                if ref.sid is None:
                    continue
                # A written argument that is not the storage being rebuilt (a
                # running statistic) is written into scratch by the replay.
                if ref.sid in rec.writes and ref.sid not in needed_writes and \
                        self.writers[ref.sid][0] < 0:
                    continue
                stack.append((ref.sid, ref.version))
        return sorted(ops), leaves
