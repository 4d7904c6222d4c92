"""Tests of the PyTorch runtime in the habits of a training loop, on CPU,
against a real slackswap-server: steps after steps with an optimizer, the
runtime reused; another shape, model or mode named, or warned of and kept
exact (on_mismatch="keep"); nothing left after an exception; a step that
cannot fit, a report without a plan and a plan without its schedule refused;
backward outside the block named; the later steps of a plan that moves
nothing untracked and checked against the first; gradient accumulation over
micro-batches; a batch sliced from a dataset.

Usage: runtime_behaviour_test.py --server BIN --repo ROOT
"""
import copy
import os
import sys
import unittest
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runtime_support  # noqa: E402  (the server, ARGS once parsed, main)
from runtime_support import (Step, assert_bitwise, assert_nothing_left, fast_link,  # noqa: E402
                             uniform_copy)


class RuntimeBehaviourTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from slackswap_client import Client, profile
        cls.step = Step("gpt")
        cls.trace = profile(cls.step.model, (cls.step.x,), cls.step.loss_fn)
        with Client(runtime_support.SERVER, deadline=60) as client:
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
        with Client(runtime_support.SERVER, deadline=60) as client:
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
        with Client(runtime_support.SERVER, deadline=60) as client:
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
                with Client(runtime_support.SERVER, deadline=60) as client:
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
        with Client(runtime_support.SERVER, deadline=60) as client:
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


if __name__ == "__main__":
    runtime_support.main()
