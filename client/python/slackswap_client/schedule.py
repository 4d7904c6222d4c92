"""What a trace and its plan fix before a step runs: the steps (each
operator, with the rebuilds the plan puts before it), the orders of offloads
and prefetches, when each tensor is let go, and each prefetch's deadline and
the static profile that the event model's prefetch admission needs."""
import collections

from . import stubs


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
