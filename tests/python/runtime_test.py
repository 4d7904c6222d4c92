"""Tests of the PyTorch runtime (client/python/slackswap_client/runtime.py) on
CPU, against a real slackswap-server.

For GPT- and BERT-style transformers, torchvision's ResNet-50, an LSTM, a GRU
and a ViT with dropout, at budgets 0.2/0.3/0.5/0.7 (SlackSwap's plans for the
A100, run at the CPU clock's speeds) and all-swap, all-recompute and
random plans: the step run under the runtime gives the loss, every gradient
and every buffer bitwise equal to an unmodified step; the saved bytes the
runtime holds, operator by operator and rebuild by rebuild, equal the event
model's resident bytes (Simulate's timeline) for the same plan on the trace
with equal operator times and a fast link (the CPU runtime's clock), and
never exceed the budget, also with copies that complete late (the CUDA
path's bookkeeping); no hook or mode is left behind, after a step or an
exception inside it.

Usage: runtime_test.py --server BIN --repo ROOT
"""
import argparse
import copy
import os
import random
import re
import subprocess
import sys
import unittest
import warnings

import torch

ARGS = None
SERVER = None


def setup_paths(repo):
    sys.path.insert(0, os.path.join(repo, "client", "python"))
    sys.path.insert(0, os.path.join(repo, "client", "python", "examples"))
    os.environ["SLACKSWAP_PROTO_DIR"] = os.path.join(repo, "proto")


def start_server():
    proc = subprocess.Popen([ARGS.server, "--listen", "127.0.0.1:0", "--metrics", "",
                             "--call_log", "none"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    match = re.match(r"listening on port (\d+)", line)
    if not match:
        proc.kill()
        raise RuntimeError("server did not start: " + line)
    return proc, f"127.0.0.1:{match.group(1)}"


def make(which):
    """(model, input, loss_fn), deterministic."""
    import models
    torch.manual_seed(0)
    if which in ("gpt", "bert"):
        model = getattr(models, which)(2, 32, 4, 16, 64)
        x = torch.randint(0, 64, (2, 16))
        return model, x, models.language_model_loss(x)
    if which == "resnet50":
        model = models.resnet50()
        if model is None:
            return None
        return model, torch.randn(2, 3, 32, 32), lambda out: out.logsumexp(-1).mean()
    if which in ("lstm", "gru"):
        model = getattr(models, which)()
        x = torch.randint(0, 64, (2, 12))
        return model, x, models.language_model_loss(x)
    if which == "vit":
        model = models.vit()
        labels = torch.randint(0, 10, (2,))
        return model, torch.randn(2, 3, 32, 32), \
            lambda out: torch.nn.functional.cross_entropy(out, labels)
    raise ValueError(which)


def uniform_copy(trace):
    """The trace as the CPU runtime's clock sees it: every operator and
    rebuild 1 ms."""
    out = copy.deepcopy(trace)
    for op in out.operators:
        op.duration_ns = 1_000_000
    for t in out.tensors:
        if not t.recompute_forbidden:
            t.recompute_duration_ns = 1_000_000
    return out


def fast_link():
    from slackswap.v1 import hardware_pb2
    return hardware_pb2.Hardware(name="fast", d2h_bytes_per_second=10**18,
                                 h2d_bytes_per_second=10**18, transfer_latency_ns=0,
                                 gpu_memory_bytes=1 << 40)


def forward_ops(trace):
    from slackswap.v1 import trace_pb2
    return sum(1 for op in trace.operators if op.phase == trace_pb2.PHASE_FORWARD)


def decisions_plan(trace, kind, rng):
    """A Plan of decisions: "swap" (every tensor that may be), "recompute"
    (likewise) or "random" (random decisions and prefetch issue points)."""
    from slackswap.v1 import plan_pb2
    nf = forward_ops(trace)
    plan = plan_pb2.Plan()
    for t in trace.tensors:
        allowed = [plan_pb2.DECISION_KEEP]
        if not t.swap_forbidden:
            allowed.append(plan_pb2.DECISION_SWAP)
        if not t.recompute_forbidden:
            allowed.append(plan_pb2.DECISION_RECOMPUTE)
        if kind == "swap":
            d = plan_pb2.DECISION_SWAP if plan_pb2.DECISION_SWAP in allowed else allowed[0]
        elif kind == "recompute":
            d = plan_pb2.DECISION_RECOMPUTE if plan_pb2.DECISION_RECOMPUTE in allowed \
                else allowed[0]
        else:
            d = rng.choice(allowed)
        tp = plan.tensors.add(decision=d)
        if d == plan_pb2.DECISION_SWAP:
            last_forward = max([t.producer_op] + [u for u in t.use_ops if u < nf])
            tp.prefetch_issue_op = rng.randint(last_forward + 1, nf) if kind == "random" else nf
    return plan


class Step:
    """Runs the model's step from the same state, plainly or in a runtime."""

    def __init__(self, which):
        self.model, self.x, self.loss_fn = make(which)
        self.state = copy.deepcopy(self.model.state_dict())

    def __call__(self, runtime=None, x=None):
        model = self.model
        model.load_state_dict(self.state)
        model.zero_grad(set_to_none=True)
        torch.manual_seed(1)
        loss_fn = self.loss_fn
        if x is not None:
            import models
            loss_fn = models.language_model_loss(x)
        x = self.x if x is None else x
        if runtime is None:
            loss = loss_fn(model(x))
            loss.backward()
        else:
            with runtime:
                loss = loss_fn(model(x))
                loss.backward()
        return (loss.detach().clone(), [p.grad.clone() for p in model.parameters()],
                [b.clone() for b in model.buffers()])


def assert_bitwise(test, expected, got, what):
    test.assertTrue(torch.equal(expected[0], got[0]), f"{what}: loss")
    for i, (a, b) in enumerate(zip(expected[1], got[1])):
        test.assertTrue(torch.equal(a, b), f"{what}: gradient {i}")
    for i, (a, b) in enumerate(zip(expected[2], got[2])):
        test.assertTrue(torch.equal(a, b), f"{what}: buffer {i}")


def assert_nothing_left(test, runtime):
    from torch.utils._python_dispatch import _get_current_dispatch_mode
    test.assertIsNone(_get_current_dispatch_mode())
    packs, dispatches = runtime.packs, runtime.dispatches
    x = torch.ones(3, requires_grad=True)
    x.exp().sum().backward()
    test.assertEqual(runtime.packs, packs, "a saved-tensor hook is still installed")
    test.assertEqual(runtime.dispatches, dispatches, "the dispatch mode is still set")


class RuntimeModelsTest(unittest.TestCase):
    """The runtime on four models, each at SlackSwap's budgets and under
    all-swap, all-recompute and random plans."""

    def check_model(self, which):
        from slackswap.v1 import planning_pb2, simulation_pb2
        from slackswap_client import Client, Runtime, profile
        if make(which) is None:
            self.skipTest("python3-torchvision is not installed")
        step = Step(which)
        trace = profile(step.model, (step.x,), step.loss_fn)
        plain = step()
        uniform = uniform_copy(trace)
        cases = []
        rng = random.Random(7)
        with Client(SERVER, deadline=60) as client:
            planned = 0
            for fraction in (0.2, 0.3, 0.5, 0.7):
                # SlackSwap's plan for the A100, run at the CPU clock's speeds
                # (copies end at once, every operator as long as the others):
                # a plan that completes at one speed completes within its
                # budget at every other (docs/event-model.md); and one made
                # for the CPU clock.
                report = client.plan(trace, "a100", budget_fraction=fraction).report
                if report.outcome == planning_pb2.PLAN_OUTCOME_PLANNED:
                    planned += 1
                    cases.append((f"a100 {fraction}", report.plan, report.metrics.budget_bytes))
                report = client.plan(uniform, fast_link(), budget_fraction=fraction).report
                if report.outcome == planning_pb2.PLAN_OUTCOME_PLANNED:
                    cases.append((f"cpu clock {fraction}", report.plan,
                                  report.metrics.budget_bytes))
            self.assertGreaterEqual(planned, 2, f"{which}: SlackSwap planned too few budgets")
            for kind in ("swap", "recompute", "random", "random"):
                plan = decisions_plan(trace, kind, rng)
                unlimited = client.simulate(uniform, plan, fast_link(), budget_bytes=1 << 50)
                # At the plan's own peak: the budget binds where it peaks.
                cases.append((kind, unlimited.plan, unlimited.metrics.peak_resident_bytes))
            for name, plan, budget in cases:
                what = f"{which} {name}"
                simulated = client.simulate(uniform, plan, fast_link(), budget_bytes=budget,
                                            timeline=True)
                # Every plan completes at the CPU clock: the A100's plans
                # made for other speeds, and the random plans at their own
                # peak.
                self.assertEqual(simulated.metrics.outcome,
                                 simulation_pb2.SIMULATION_OUTCOME_COMPLETED, what)
                runtime = Runtime(trace, simulated.plan, budget_bytes=budget)
                with warnings.catch_warnings():
                    warnings.simplefilter("error")  # no warning, no BudgetError
                    assert_bitwise(self, plain, step(runtime), what)
                assert_nothing_left(self, runtime)
                expected = [("op" if e.kind == simulation_pb2.TIMELINE_EVENT_KIND_OP
                             else "rebuild", e.index, e.resident_bytes)
                            for e in simulated.timeline.events
                            if e.kind in (simulation_pb2.TIMELINE_EVENT_KIND_OP,
                                          simulation_pb2.TIMELINE_EVENT_KIND_REBUILD)]
                first = next((i for i, (a, b) in enumerate(zip(runtime.ledger, expected))
                              if a != b), None)
                self.assertEqual(len(runtime.ledger), len(expected), what)
                self.assertIsNone(first, f"{what}: step {first}: runtime "
                                  f"{runtime.ledger[first] if first is not None else ''}, "
                                  f"event model {expected[first] if first is not None else ''}")
                self.assertLessEqual(runtime.peak_bytes, budget, what)
                self.assertEqual(runtime.peak_bytes, simulated.metrics.peak_resident_bytes, what)
                # The CUDA path's bookkeeping (offloads complete when their
                # events do, polled; a started prefetch is waited for on the
                # device), on CPU with events that complete after 3 polls.
                runtime = Runtime(trace, simulated.plan, budget_bytes=budget, _cpu_async=3)
                assert_bitwise(self, plain, step(runtime), what + " (asynchronous copies)")
                self.assertLessEqual(runtime.peak_bytes, budget, what + " (asynchronous copies)")
        return trace

    def test_gpt(self):
        self.check_model("gpt")

    def test_bert(self):
        self.check_model("bert")

    def test_resnet50(self):
        self.check_model("resnet50")

    def test_lstm(self):
        self.check_model("lstm")

    def test_gru(self):
        self.check_model("gru")

    def test_vit_with_dropout(self):
        self.check_model("vit")


class EdgeCases:
    """Small models that write storages in place in awkward ways."""

    class TwoVersions(torch.nn.Module):
        # One storage read at two versions by one recipe: the old one it
        # rebuilds (h), the new one resident (relu_'s output).
        def __init__(self):
            super().__init__()
            self.l1 = torch.nn.Linear(8, 8)
            self.l2 = torch.nn.Linear(8, 4)

        def forward(self, x):
            h = self.l1(x)
            a = h + 1
            torch.nn.functional.relu(h, inplace=True)
            return self.l2((a + h).sin())

    class AlphaDropout(torch.nn.Module):
        # Its noise buffer is read at one version and saved at the next.
        def __init__(self):
            super().__init__()
            self.l1 = torch.nn.Linear(8, 16)
            self.l2 = torch.nn.Linear(16, 4)

        def forward(self, x):
            return self.l2(torch.nn.functional.alpha_dropout(torch.selu(self.l1(x)), 0.2, True))

    class InPlaceOnAView(torch.nn.Module):
        # Backward runs CopySlices: an in-place write into a storage made in
        # backward, which is not gradient accumulation.
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(8, 16)
            self.b = torch.nn.Linear(16, 4)

        def forward(self, x):
            h = self.a(x)
            h2 = h * 1.5
            h2[:, :8].add_(h[:, 8:])
            return self.b(torch.sin(h2))

    class SliceAssignedRNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = torch.nn.RNNCell(8, 16)
            self.out = torch.nn.Linear(16, 5)

        def forward(self, x):
            batch, steps, _ = x.shape
            out = x.new_zeros(batch, steps, 16)
            h = x.new_zeros(batch, 16)
            for t in range(steps):
                h = self.cell(x[:, t], h)
                out[:, t] = h
            return self.out(out)


class RuntimeEdgeCasesTest(unittest.TestCase):
    def check(self, model, x):
        from slackswap.v1 import simulation_pb2
        from slackswap_client import Client, Runtime, profile
        torch.manual_seed(0)
        loss_fn = lambda out: out.pow(2).sum()  # noqa: E731
        step = Step.__new__(Step)
        step.model, step.x, step.loss_fn = model, x, loss_fn
        step.state = copy.deepcopy(model.state_dict())
        trace = profile(model, (x,), loss_fn)
        plain = step()
        uniform = uniform_copy(trace)
        rng = random.Random(11)
        with Client(SERVER, deadline=60) as client:
            for kind in ("swap", "recompute", "random", "random", "random"):
                plan = decisions_plan(trace, kind, rng)
                simulated = client.simulate(uniform, plan, fast_link(), budget_bytes=1 << 50,
                                            timeline=True)
                self.assertEqual(simulated.metrics.outcome,
                                 simulation_pb2.SIMULATION_OUTCOME_COMPLETED)
                for delay in (0, 3):
                    runtime = Runtime(trace, simulated.plan, budget_bytes=1 << 50,
                                      _cpu_async=delay)
                    what = f"{type(model).__name__} {kind} async={delay}"
                    assert_bitwise(self, plain, step(runtime), what)
                    if delay == 0:
                        expected = [("op" if e.kind == simulation_pb2.TIMELINE_EVENT_KIND_OP
                                     else "rebuild", e.index, e.resident_bytes)
                                    for e in simulated.timeline.events
                                    if e.kind in (simulation_pb2.TIMELINE_EVENT_KIND_OP,
                                                  simulation_pb2.TIMELINE_EVENT_KIND_REBUILD)]
                        self.assertEqual(runtime.ledger, expected, what)
                        self.assertEqual(runtime.peak_bytes,
                                         simulated.metrics.peak_resident_bytes, what)

    def test_a_recipe_reads_a_storage_at_two_versions(self):
        self.check(EdgeCases.TwoVersions(), torch.randn(4, 8))

    def test_alpha_dropout(self):
        self.check(EdgeCases.AlphaDropout(), torch.randn(4, 8))

    def test_an_in_place_op_on_a_view(self):
        self.check(EdgeCases.InPlaceOnAView(), torch.randn(4, 8))

    def test_slice_assignment_in_a_loop(self):
        self.check(EdgeCases.SliceAssignedRNN(), torch.randn(2, 5, 8))


class RuntimeBehaviourTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from slackswap_client import Client, profile
        cls.step = Step("gpt")
        cls.trace = profile(cls.step.model, (cls.step.x,), cls.step.loss_fn)
        with Client(SERVER, deadline=60) as client:
            # The passes' plan (no anytime search): it keeps, swaps and
            # recomputes, which these tests need.
            cls.report = client.plan(cls.trace, "a100", budget_fraction=0.4,
                                     search_time_ms=0).report
        decisions = {t.decision for t in cls.report.plan.tensors}
        assert len(decisions) == 3, decisions  # keep, swap and recompute

    def test_steps_after_steps_with_an_optimizer(self):
        # Three steps with SGD between them (gradients zeroed, not set to
        # None: autograd adds into them), the runtime reused: every step
        # bitwise equal to the same loop without it.
        from slackswap_client import Runtime

        def train(runtime):
            model = self.step.model
            model.load_state_dict(self.step.state)
            model.zero_grad(set_to_none=True)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            torch.manual_seed(3)
            losses = []
            for _ in range(3):
                optimizer.zero_grad(set_to_none=False)
                if runtime is None:
                    loss = self.step.loss_fn(model(self.step.x))
                    loss.backward()
                else:
                    with runtime:
                        loss = self.step.loss_fn(model(self.step.x))
                        loss.backward()
                optimizer.step()
                losses.append(loss.detach().clone())
            return losses, [p.detach().clone() for p in model.parameters()]

        expected = train(None)
        runtime = Runtime(self.trace, self.report)
        got = train(runtime)
        for a, b in zip(expected[0] + expected[1], got[0] + got[1]):
            self.assertTrue(torch.equal(a, b))
        self.assertLessEqual(runtime.peak_bytes, self.report.metrics.budget_bytes)

    def test_a_different_shape_is_named(self):
        from slackswap_client import MismatchError, Runtime
        longer = torch.randint(0, 64, (3, 16))  # batch 3, not 2
        with self.assertRaises(MismatchError) as error:
            self.step(Runtime(self.trace, self.report), x=longer)
        self.assertRegex(str(error.exception), r"saved tensor \d+ .*the trace has \d+ bytes")
        assert_nothing_left(self, Runtime(self.trace, self.report))

    def test_a_different_model_is_named(self):
        from slackswap_client import MismatchError, Runtime
        other = Step("lstm")
        with self.assertRaises(MismatchError) as error:
            other(Runtime(self.trace, self.report))
        self.assertRegex(str(error.exception), r"^op 1: the trace has arange, the step ran ")

    def test_keep_on_mismatch_warns_and_stays_exact(self):
        from slackswap_client import Runtime
        longer = torch.randint(0, 64, (3, 16))
        expected = self.step(x=longer)
        runtime = Runtime(self.trace, self.report, on_mismatch="keep")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = self.step(runtime, x=longer)
        self.assertTrue(any("keeping every tensor" in str(w.message) for w in caught))
        assert_bitwise(self, expected, got, "after a mismatch")
        # A mismatch in the middle of forward (an extra op in one layer):
        # what was already swapped or dropped comes back on demand.
        model = self.step.model
        layer = model.layer1
        original = layer.forward

        def patched(x):
            return original(x * 1.0)
        layer.forward = patched
        try:
            expected = self.step()
            with warnings.catch_warnings(record=True):
                warnings.simplefilter("always")
                got = self.step(Runtime(self.trace, self.report, on_mismatch="keep"))
        finally:
            layer.forward = original
        assert_bitwise(self, expected, got, "a mismatch in the middle of forward")

    def test_nothing_left_after_an_exception(self):
        from slackswap_client import Runtime
        runtime = Runtime(self.trace, self.report)
        with self.assertRaises(ZeroDivisionError):
            with runtime:
                self.step.model(self.step.x)
                1 / 0
        assert_nothing_left(self, runtime)
        # The runtime can run a full step afterwards.
        assert_bitwise(self, self.step(), self.step(runtime), "after an exception")

    def test_a_step_that_cannot_fit_raises_and_names_it(self):
        # The plan made for 40%, run at a budget the event model says it
        # cannot complete in: the first step that can never start is named,
        # and nothing runs over the budget or is left behind.
        from slackswap_client import BudgetError, Client, Runtime
        from slackswap.v1 import simulation_pb2
        budget = self.report.metrics.peak_resident_bytes * 3 // 4
        with Client(SERVER, deadline=60) as client:
            simulated = client.simulate(uniform_copy(self.trace), self.report.plan, fast_link(),
                                        budget_bytes=budget)
        self.assertEqual(simulated.metrics.outcome, simulation_pb2.SIMULATION_OUTCOME_INFEASIBLE)
        why = simulated.metrics.infeasibility
        blocked = (f"the rebuild of tensor {why.rebuild_tensor}" if why.rebuild_tensor >= 0
                   else f"op {why.op}")
        runtime = Runtime(self.trace, simulated.plan, budget_bytes=budget)
        with self.assertRaisesRegex(BudgetError, f"{blocked} cannot start within the budget"):
            self.step(runtime)
        self.assertLessEqual(runtime.peak_bytes, budget)
        assert_nothing_left(self, runtime)

    def test_a_report_without_a_plan_is_refused_with_its_outcome(self):
        # An infeasible (or not planned) report would run the step over its
        # budget: refused, saying why, the floor and the budget that plans.
        from slackswap.v1 import planning_pb2
        from slackswap_client import PlanError, Runtime
        for outcome in (planning_pb2.PLAN_OUTCOME_INFEASIBLE,
                        planning_pb2.PLAN_OUTCOME_NO_PLAN_FOUND):
            report = planning_pb2.PlanningReport()
            report.CopyFrom(self.report)
            report.outcome = outcome
            report.reason = "op 3 must hold more than the budget"
            report.proven_floor_bytes = 12345
            report.smallest_planned_budget_bytes = 23456
            with self.assertRaises(PlanError) as refused:
                Runtime(self.trace, report)
            message = str(refused.exception)
            self.assertIn(planning_pb2.PlanOutcome.Name(outcome), message)
            self.assertIn("op 3 must hold more than the budget", message)
            self.assertIn("12345", message)
            self.assertIn("23456", message)
        # The report of a plan runs.
        Runtime(self.trace, self.report)

    def test_backward_outside_the_block_is_named_and_the_runtime_recovers(self):
        # The whole step, backward included, belongs inside the block: a
        # backward after it fails saying so, and the next step runs exactly.
        from slackswap_client import MismatchError, Runtime
        runtime = Runtime(self.trace, self.report)
        with self.assertRaisesRegex(MismatchError, "backward included"):
            with runtime:
                loss = self.step.loss_fn(self.step.model(self.step.x))
        # (Autograd re-raises what a saved-tensor hook raises as a RuntimeError
        # with the same message.)
        with self.assertRaisesRegex(RuntimeError, "MismatchError: .*inside the `with` block"):
            loss.backward()
        assert_nothing_left(self, runtime)
        assert_bitwise(self, self.step(), self.step(runtime), "after a backward outside")

    def test_the_habits_of_a_training_loop_run_inside_the_block(self):
        # Gradients zeroed in place inside the block, the loss read and
        # checked before backward: not the profiled step's ops, let through,
        # and the step stays bitwise the plain one.
        from slackswap_client import Runtime
        model = self.step.model

        def step(runtime):
            model.load_state_dict(self.step.state)
            for p in model.parameters():
                p.grad = torch.zeros_like(p)
            torch.manual_seed(1)
            losses = []

            def body():
                for p in model.parameters():
                    p.grad.zero_()
                loss = self.step.loss_fn(model(self.step.x))
                losses.append(loss.item())
                if not bool(torch.isfinite(loss).all()):
                    raise FloatingPointError
                loss.backward()
                return loss
            if runtime is None:
                loss = body()
            else:
                with runtime:
                    loss = body()
            return loss.detach(), [p.grad.clone() for p in model.parameters()], losses

        expected = step(None)
        got = step(Runtime(self.trace, self.report))
        self.assertTrue(torch.equal(expected[0], got[0]))
        for a, b in zip(expected[1], got[1]):
            self.assertTrue(torch.equal(a, b))
        self.assertEqual(expected[2], got[2])

    def test_a_step_in_the_other_mode_is_named_as_a_mode_change(self):
        # Profiled in training mode (dropout), run in evaluation mode: the
        # mismatch says so.
        from slackswap_client import MismatchError, Runtime
        self.step.model.eval()
        try:
            with self.assertRaisesRegex(MismatchError, r"model\.train\(\)"):
                self.step(Runtime(self.trace, self.report))
        finally:
            self.step.model.train()
        assert_nothing_left(self, Runtime(self.trace, self.report))

    def test_a_plan_without_its_schedule_is_refused(self):
        from slackswap.v1 import plan_pb2
        from slackswap_client import Runtime
        bare = plan_pb2.Plan()
        bare.tensors.extend(self.report.plan.tensors)
        with self.assertRaisesRegex(ValueError, "plan.prefetches"):
            Runtime(self.trace, bare, budget_bytes=self.report.metrics.budget_bytes)
        with self.assertRaisesRegex(ValueError, "budget_bytes"):
            Runtime(self.trace, self.report.plan)


class _ConvNeXtLike(torch.nn.Module):
    """ConvNeXt's layout: a Conv2d on channels-first, the rest on
    channels-last (permuted views), so the convolution's weight gradient comes
    in a layout other than the weight's."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Linear(3, 8)
        self.blocks = torch.nn.ModuleList(
            torch.nn.ModuleDict({"conv": torch.nn.Conv2d(8, 8, 3, padding=1),
                                 "norm": torch.nn.LayerNorm(8), "mlp": torch.nn.Linear(8, 8)})
            for _ in range(2))
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):  # x: (batch, height, width, 3)
        h = self.stem(x)
        for b in self.blocks:
            y = b["conv"](h.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
            h = h + b["mlp"](torch.nn.functional.gelu(b["norm"](y)))
        return self.head(h.mean((1, 2)))


class UntrackedStepsTest(unittest.TestCase):
    """A plan that moves nothing tracks its operators in its first step only;
    later steps check the tensors autograd saves against the first step's."""

    @classmethod
    def setUpClass(cls):
        from slackswap.v1 import plan_pb2
        from slackswap_client import Client, profile
        cls.step = Step("gpt")
        cls.trace = profile(cls.step.model, (cls.step.x,), cls.step.loss_fn)
        keep = plan_pb2.Plan()
        for _ in cls.trace.tensors:
            keep.tensors.add(decision=plan_pb2.DECISION_KEEP)
        with Client(SERVER, deadline=60) as client:
            cls.simulated = client.simulate(cls.trace, keep, budget_bytes=1 << 50)
            cls.report = client.plan(cls.trace, "a100", budget_fraction=0.4,
                                     search_time_ms=0).report

    def runtime(self, **kwargs):
        from slackswap_client import Runtime
        return Runtime(self.trace, self.simulated.plan,
                       budget_bytes=self.simulated.metrics.peak_resident_bytes, **kwargs)

    def test_later_steps_of_an_all_keep_plan_skip_the_dispatch_mode(self):
        plain = self.step()
        runtime = self.runtime()
        seen = []
        for i in range(3):
            before = (runtime.packs, runtime.dispatches)
            assert_bitwise(self, plain, self.step(runtime), f"step {i}")
            seen.append((runtime.tracked, runtime.packs - before[0],
                         runtime.dispatches - before[1], len(runtime.ledger)))
            assert_nothing_left(self, runtime)
        self.assertEqual([s[0] for s in seen], [True, False, False])
        self.assertGreater(seen[0][2], len(self.trace.operators))
        self.assertEqual(len({s[1] for s in seen}), 1, seen)  # the same saves each step
        self.assertEqual([s[2] for s in seen[1:]], [0, 0], "later steps dispatched")
        self.assertEqual([s[3] for s in seen], [len(self.trace.operators), 0, 0])
        self.assertLessEqual(runtime.peak_bytes, self.simulated.metrics.peak_resident_bytes)

    def test_every_step_is_tracked_on_request_and_when_the_plan_moves_tensors(self):
        from slackswap_client import Runtime
        for runtime in (self.runtime(track_ops="always"), Runtime(self.trace, self.report)):
            for i in range(2):
                dispatches = runtime.dispatches
                self.step(runtime)
                self.assertTrue(runtime.tracked)
                self.assertGreater(runtime.dispatches, dispatches)
        with self.assertRaisesRegex(ValueError, "track_ops"):
            self.runtime(track_ops="never")

    def test_an_untracked_step_that_saves_otherwise_is_named(self):
        # Another sequence length after the first step: the first saved
        # tensor that differs is named with the first step's bytes; with
        # on_mismatch="keep" the step warns and stays exact (nothing moved).
        # A step that saves fewer tensors than the first (here none) is
        # named at its end.
        from slackswap_client import MismatchError
        x = self.step.x[:, :8]
        for on_mismatch in ("raise", "keep"):
            runtime = self.runtime(on_mismatch=on_mismatch)
            self.step(runtime)
            if on_mismatch == "raise":
                with self.assertRaisesRegex(
                        RuntimeError, r"saved tensor \d+ of the step: \d+ bytes of "
                        r"int64; the first step saved \d+ bytes of int64 there \(trace "
                        r"tensor \d+, saved\d+, output 0 of op \d+ \w+\)"):
                    self.step(runtime, x=x)
                assert_nothing_left(self, runtime)
                with self.assertRaisesRegex(MismatchError, r"saved 0 tensors for backward, "
                                            r"its first step \d+"):
                    with runtime, torch.no_grad():
                        self.step.model(self.step.x)
                assert_nothing_left(self, runtime)
            else:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    got = self.step(runtime, x=x)
                self.assertEqual(len(caught), 1, [str(w.message) for w in caught])
                self.assertIn("keeping every tensor", str(caught[0].message))
                assert_bitwise(self, self.step(x=x), got, "a mismatched untracked step")
            assert_bitwise(self, self.step(), self.step(runtime), "the next step")


class GradientAccumulationTest(unittest.TestCase):
    def test_micro_batches_accumulate_whether_grad_was_none_or_not_at_profiling(self):
        # A first gradient whose layout differs from its parameter's is made
        # with new_empty_strided + copy_; a later micro-batch adds in place.
        # Profiled with .grad None or present, two steps of two micro-batches
        # each (gradients set to None before the first, zeroed in place
        # before the second) run under SlackSwap's plan bitwise as without it.
        from slackswap_client import Client, Runtime, profile
        torch.manual_seed(0)
        model = _ConvNeXtLike()
        state = copy.deepcopy(model.state_dict())
        batches = [torch.randn(2, 6, 6, 3) for _ in range(4)]

        def loss_fn(out):
            return out.logsumexp(-1).mean()

        def train(runtime):
            model.load_state_dict(state)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for step, set_to_none in enumerate((True, False)):
                optimizer.zero_grad(set_to_none=set_to_none)
                for x in batches[2 * step:2 * step + 2]:
                    if runtime is None:
                        loss_fn(model(x)).backward()
                    else:
                        with runtime:
                            loss_fn(model(x)).backward()
                optimizer.step()
            return [p.detach().clone() for p in model.parameters()]

        expected = train(None)
        for grads in ("none", "present"):
            with self.subTest(grads_when_profiled=grads):
                model.load_state_dict(state)
                model.zero_grad(set_to_none=True)
                if grads == "present":
                    for p in model.parameters():
                        p.grad = torch.zeros_like(p)
                trace = profile(model, (batches[0],), loss_fn)
                with Client(SERVER, deadline=60) as client:
                    report = client.plan(trace, "a100", budget_fraction=0.5,
                                         search_time_ms=0).report
                from slackswap.v1 import plan_pb2
                moved = sum(1 for t in report.plan.tensors
                            if t.decision != plan_pb2.DECISION_KEEP)
                self.assertGreater(moved, 0)
                runtime = Runtime(trace, report)
                got = train(runtime)
                for i, (a, b) in enumerate(zip(expected, got)):
                    self.assertTrue(torch.equal(a, b), f"parameter {i}")
                self.assertLessEqual(runtime.peak_bytes, report.metrics.budget_bytes)


class ViewBatchTest(unittest.TestCase):
    def test_a_batch_sliced_from_a_dataset_counts_as_the_slice(self):
        # X[0:4] of a dataset tensor: the trace's input is the slice's bytes
        # (as for a batch of its own), not the dataset's storage; a step on
        # the next slice runs under the plan bitwise as without it.
        import models
        from slackswap_client import Client, Runtime, profile
        torch.manual_seed(0)
        model = models.gpt(1, 32, 4, 16, 64)
        data = torch.randint(0, 64, (500, 16))
        state = copy.deepcopy(model.state_dict())

        def loss_for(x):
            return models.language_model_loss(x)

        sliced = profile(model, (data[0:4],), loss_for(data[0:4]))
        own = profile(model, (data[0:4].clone(),), loss_for(data[0:4]))
        self.assertEqual([t.size_bytes for t in sliced.tensors],
                         [t.size_bytes for t in own.tensors])
        inputs = [t.size_bytes for t in sliced.tensors if t.producer_op == 0]
        self.assertIn(4 * 16 * data.element_size(), inputs)
        self.assertLess(max(inputs), data.storage().nbytes())
        with Client(SERVER, deadline=60) as client:
            report = client.plan(sliced, "a100", budget_fraction=0.5, search_time_ms=0).report
        runtime = Runtime(sliced, report)
        results = []
        for run in (None, runtime):
            model.load_state_dict(state)
            model.zero_grad(set_to_none=True)
            x = data[4:8]
            loss_fn = loss_for(x)
            torch.manual_seed(1)
            if run is None:
                loss_fn(model(x)).backward()
            else:
                with run:
                    loss_fn(model(x)).backward()
            results.append([p.grad.clone() for p in model.parameters()])
        for i, (a, b) in enumerate(zip(*results)):
            self.assertTrue(torch.equal(a, b), f"gradient {i}")
        self.assertLessEqual(runtime.peak_bytes, report.metrics.budget_bytes)


class TrainingExampleTest(unittest.TestCase):
    def test_the_training_example_runs_and_matches_the_plain_loop(self):
        # examples/train_gpt.py: profile, plan, and five Adam steps under the
        # plan, bitwise equal to the loop without it, within the budget.
        script = os.path.join(ARGS.repo, "client", "python", "examples", "train_gpt.py")
        done = subprocess.run(["/usr/bin/python3", script, "--server", SERVER],
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("bitwise equal to the plain loop: True", done.stdout)
        self.assertRegex(done.stdout, r"'swap': \d+|'recompute': \d+")


class MeasurementScriptTest(unittest.TestCase):
    def test_the_cuda_measurement_script_runs_on_cpu(self):
        # The script that fills docs/measurements.md on a CUDA machine, with a
        # tiny model on CPU: it must run through and write its table.
        import tempfile
        script = os.path.join(ARGS.repo, "client", "python", "examples", "measure_runtime.py")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "measurements.md")
            done = subprocess.run(["/usr/bin/python3", script, "--server-bin", ARGS.server,
                                   "--cpu-smoke", "--out", out], capture_output=True, text=True,
                                  timeout=300)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            with open(out) as f:
                text = f.read()
        rows = [line for line in text.splitlines() if re.match(r"^\| \d+% \| \d", line)]
        self.assertEqual(len(rows), 2, text)


def main():
    global ARGS, SERVER
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--repo", required=True)
    ARGS, rest = parser.parse_known_args()
    setup_paths(ARGS.repo)
    from slackswap_client import stubs
    stubs.load()
    proc, SERVER = start_server()
    try:
        program = unittest.main(argv=[sys.argv[0], *rest], exit=False, verbosity=2)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stdout.close()
    failed = len(program.result.failures) + len(program.result.errors)
    skipped = len(program.result.skipped)
    print(f"{program.result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    sys.exit(0 if program.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
