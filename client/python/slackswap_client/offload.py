"""The host-link traffic a training job makes itself when it keeps optimizer
state or parameters in host memory, added to a profiled trace as fixed
transfers (slackswap.v1.FixedTransfer). The modes and each unit's transfers
are the workload generator's (simulator/offload_traffic.h; docs/workloads.md,
"Offload modes"); the bytes are the model's own parameters instead of a
formula.

- Units: the modules that are the FSDP units (profile's offload_units, by
  default the trace's blocks), taken in the order their forward passes start.
  A forward op belongs to the innermost unit whose forward runs it; one
  outside every unit joins the unit that runs next, else the one that ran
  last: as in the generator, the first unit takes the embedding before it,
  the last one the head and the loss after it. A backward op belongs to the
  unit of the latest forward op whose saved tensors it reads; one that reads
  none, to the unit whose parameter's gradient it makes, else to the next
  backward op's unit (as blocks do); one still outside, to the unit that ran
  last in backward, else the next.
- Bytes: each parameter counts once, at its element size (its gradient's for
  the gradient copies): a parameter of nested units belongs to the innermost,
  one of several sibling units (tied weights) to the first to run, one outside
  every unit to the unit of the first op that reads it (the first unit if no
  op does). Parameter fetches (FSDP) move every parameter; ZeRO's updated
  parameters and every mode's gradients only those that require a gradient.
"""
from .recording import storage_key

MODES = ("none", "zero", "zero-dpu", "fsdp-cpu")
FORWARD, BACKWARD = 1, 2  # slackswap.v1.Phase
_MAX_NAME_BYTES = 240       # names are at most 256 bytes with the suffix


class UnitError(RuntimeError):
    """A unit that cannot carry the traffic (it ran no forward or no backward op)."""


def offload_mode(offload):
    """The mode's name, or None for no traffic (None or "none"). ValueError
    naming the argument for any other value."""
    if offload is None or offload == "none":
        return None
    if offload not in MODES:
        raise ValueError(f"offload: unknown mode {offload!r}; one of "
                         f"{', '.join(MODES)} or None")
    return offload


class _UnitOps:
    __slots__ = ("first_forward", "last_forward", "first_backward", "last_backward")

    def __init__(self):
        self.first_forward = self.last_forward = -1
        self.first_backward = self.last_backward = -1


def absorb(unit_of_op, phases):
    """unit_of_op (1 + a unit's index, 0: outside every unit; phases: FORWARD
    or BACKWARD, per op) with each outside op in a unit: in forward
    the one that runs next, else the one that ran last; in backward the one
    that ran last, else the next. O(ops)."""
    out = list(unit_of_op)
    for phase in (FORWARD, BACKWARD):
        ops = [i for i, p in enumerate(phases) if p == phase]
        if phase == BACKWARD:
            ops.reverse()
        following = 0
        for i in reversed(ops):
            following = out[i] = out[i] or following
        previous = 0
        for i in ops:
            previous = out[i] = out[i] or previous
    return out


def _unit_ops(unit_of_op, phases, n):
    ops = [_UnitOps() for _ in range(n)]
    for i, (u, phase) in enumerate(zip(unit_of_op, phases)):
        if u == 0:
            continue
        o = ops[u - 1]
        if phase == FORWARD:
            if o.first_forward < 0:
                o.first_forward = i
            o.last_forward = i
        elif phase == BACKWARD:
            if o.first_backward < 0:
                o.first_backward = i
            o.last_backward = i
    return ops


def _owners(model, units, order, unit_of_op, first_reads):
    """Per parameter (by id) the unit (index into `units`) whose bytes it is."""
    owner = {}
    unit_ids = {id(m): u for u, m in enumerate(units)}
    for u in order:  # forward order: tied weights go to the first unit to run
        inner = {id(p) for m in units[u].modules()
                 if unit_ids.get(id(m), u) != u for p in m.parameters()}
        for p in units[u].parameters():
            if id(p) not in inner:
                owner.setdefault(id(p), u)
    for p in model.parameters():
        if id(p) not in owner:
            op = first_reads.get(storage_key(p))
            read = op is not None and unit_of_op[op] > 0
            owner[id(p)] = unit_of_op[op] - 1 if read else order[0]
    return owner


def _bytes(model, units, owner):
    """Per unit: (all parameters, those requiring a gradient, their gradients) in bytes."""
    params, trainable, grads = ([0] * len(units) for _ in range(3))
    seen = set()
    for p in list(model.parameters()) + [p for m in units for p in m.parameters()]:
        if id(p) in seen or id(p) not in owner:
            continue
        seen.add(id(p))
        u = owner[id(p)]
        params[u] += p.numel() * p.element_size()
        if p.requires_grad:
            trainable[u] += p.numel() * p.element_size()
            grad = p.grad if p.grad is not None else p
            grads[u] += p.numel() * grad.element_size()
    return params, trainable, grads


def _transfers(mode, names, ops, params, trainable, grads, last_forward_op, last_op):
    """The transfers of `mode` as (name, direction, size, after_op, before_op,
    gpu_bytes, release_op), None for unset; units in forward order. As
    Transfers() in simulator/offload_traffic.cc."""
    n = len(names)
    out = []

    def gradients():
        # In backward order: the last unit's gradients are ready first.
        for u in reversed(range(n)):
            out.append((names[u] + ".grad", "D2H", grads[u], ops[u].last_backward, None,
                        grads[u], None))

    if mode == "zero":
        gradients()
        for u in range(n):
            out.append((names[u] + ".params", "H2D", trainable[u], last_op, None, 0, None))
    elif mode == "zero-dpu":
        for u in range(n):
            out.append((names[u] + ".params", "H2D", trainable[u], None, ops[u].first_forward,
                        0, None))
        gradients()
    elif mode == "fsdp-cpu":
        for u in range(n):
            out.append((names[u] + ".params.fwd", "H2D", params[u],
                        ops[u - 1].first_forward if u > 0 else None, ops[u].first_forward,
                        params[u], ops[u].last_forward))
        # Backward fetches in backward order: unit u's may start once the
        # backward of the unit that runs just before it (the next unit's, in
        # a model whose backward mirrors its forward) has begun.
        for u in reversed(range(n)):
            earlier = [o.first_backward for o in ops if o.first_backward < ops[u].first_backward]
            out.append((names[u] + ".params.bwd", "H2D", params[u],
                        max(earlier) if earlier else last_forward_op, ops[u].first_backward,
                        params[u], ops[u].last_backward))
        gradients()
    return out


def _names(model, units):
    """Each unit's qualified name in `model` ("layer0", "blocks.3"), else "unit<k>"."""
    qualified = {id(m): name for name, m in model.named_modules() if name}
    return [qualified.get(id(m), f"unit{k}").encode()[:_MAX_NAME_BYTES].decode(errors="ignore")
            for k, m in enumerate(units)]


def add_offload_traffic(trace, mode, model, units, unit_of_op, first_reads):
    """Appends to `trace` (a slackswap.v1.Trace) the fixed transfers of `mode`
    (a name offload_mode accepted, not None) for `units` (modules of `model`).

    unit_of_op: per operator of the trace, 1 + the index in `units` of the
    unit it ran in (0: in none). first_reads: storage_key of a parameter ->
    the first operator that reads it. UnitError when a unit ran no forward or
    no backward op. O(operators + parameters x units)."""
    from slackswap.v1 import trace_pb2
    phases = [op.phase for op in trace.operators]
    unit_of_op = absorb(unit_of_op, phases)
    ops = _unit_ops(unit_of_op, phases, len(units))
    for k, o in enumerate(ops):
        if o.first_forward < 0 or o.first_backward < 0:
            raise UnitError(f"offload_units[{k}] ({type(units[k]).__name__}) ran no "
                            f"{'forward' if o.first_forward < 0 else 'backward'} operator")
    order = sorted(range(len(units)), key=lambda u: ops[u].first_forward)
    owner = _owners(model, units, order, unit_of_op, first_reads)
    params, trainable, grads = _bytes(model, units, owner)
    last_forward_op = max(i for i, p in enumerate(phases) if p == FORWARD)
    names = _names(model, units)
    transfers = _transfers(mode, [names[u] for u in order],
                           [ops[u] for u in order], [params[u] for u in order],
                           [trainable[u] for u in order], [grads[u] for u in order],
                           last_forward_op, len(phases) - 1)
    for name, direction, size, after, before, gpu_bytes, release in transfers:
        x = trace.fixed_transfers.add(name=name, direction=getattr(trace_pb2, "DIRECTION_" +
                                                                   direction),
                                      size_bytes=size, gpu_bytes=gpu_bytes)
        if after is not None:
            x.after_op = after
        if before is not None:
            x.before_op = before
        if release is not None and gpu_bytes > 0:
            x.release_op = release
