"""The rebuilds of recomputed tensors: replaying the operators that made a
tensor, with the random-number state each random op had, so the rebuilt
tensor is bitwise the original (a mixin of Runtime, over the
state Runtime._reset sets)."""
import torch

from .errors import MismatchError
from .recording import TensorRef, flatten_outputs, storage_base, unflatten_call


class _Rebuilds:
    """Runtime's rebuilds, before the plan's rebuild points or on demand, and
    the random-number states they replay with."""

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
