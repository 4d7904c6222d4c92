"""Long calls stop when their caller no longer wants them: for each shape of
long work on the newer surfaces (64 skewed ranks, the LP bound, a node of
jobs), a 1 s deadline, a client cancel and a SIGTERM under --grace 2s each
leave no planning thread busy more than 1 s later (the in-flight gauge back
to 0), and the process exits within the grace period and 1 s.

Run by ctest: stop_e2e_test.py --server BIN --cli BIN --proto-dir DIR
"""
import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402  (Server, stub generation)
from hardening_e2e_test import a100, shaped_trace, skewed_node  # noqa: E402

# How much later than the deadline, the cancel or the end of the grace period
# the work may still run: the replays and the solver poll the stop every
# thousand events or 64 iterations, far more often.
SLACK_S = 1.0


def shapes():
    """(name, method, request): each plans for several seconds at least."""
    from slackswap.v1 import plan_pb2, planning_pb2, service_pb2, simulation_pb2
    skewed = simulation_pb2.Physics(rank_skew_ns=1000,
                                    allocator=simulation_pb2.ALLOCATOR_MODEL_CACHING)
    big = shaped_trace(20_000, "tensors")
    keep = plan_pb2.Plan(tensors=[plan_pb2.TensorPlan(decision=plan_pb2.DECISION_KEEP)
                                  for _ in big.tensors])
    node = a100()
    node.uplink_d2h_bytes_per_second = node.uplink_h2d_bytes_per_second = 12_500_000_000
    # A job of 1 ns operators (its steps take no time to speak of) beside one
    # of about 2 s a step.
    fast = shaped_trace(20_000, "tensors")
    for op in fast.operators:
        op.duration_ns = 1
    slow = shaped_trace(1_000, "tensors")
    for op in slow.operators:
        op.duration_ns = 1_000_000
    half = plan_pb2.Budget(fraction_of_peak=0.5)
    reserved = simulation_pb2.Physics(rank_skew_ns=1000, budget_reserved=True,
                                      allocator=simulation_pb2.ALLOCATOR_MODEL_CACHING)
    return [
        ("simulate 64 skewed ranks", "Simulate", service_pb2.SimulateRequest(
            trace=big, hardware=skewed_node(), budget=plan_pb2.Budget(unlimited=True),
            plan=keep, include_timeline=True, physics=skewed)),
        # The LP bound, then the anytime search for a minute (its solve polls
        # the stop too: tests/planner/hardening_test.cc).
        ("plan with the LP bound and a long search", "Plan", service_pb2.PlanRequest(
            trace=shaped_trace(8_000, "relations"), hardware=a100(),
            budget=plan_pb2.Budget(fraction_of_peak=0.3),
            options=planning_pb2.PlannerOptions(linear_program_bound=True,
                                                search_time_ms=60_000, gap_target=0))),
        ("node: 1 ns job beside a 2 s one", "PlanNode", service_pb2.PlanNodeRequest(
            hardware=node, steps=32,
            jobs=[service_pb2.NodeJob(name="fast", trace=fast, budget=half),
                  service_pb2.NodeJob(name="slow", trace=slow, budget=half)])),
        ("node of 8 jobs", "PlanNode", service_pb2.PlanNodeRequest(
            hardware=node, jobs=[service_pb2.NodeJob(trace=shaped_trace(10_000, "tensors"),
                                                     budget=half) for _ in range(8)])),
        ("plan on 64 skewed ranks, reserved budget", "Plan", service_pb2.PlanRequest(
            trace=shaped_trace(10_000, "tensors"), hardware=skewed_node(), budget=half,
            physics=reserved)),
    ]


class StopTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.shapes = shapes()

    def server(self, *flags):
        # No per-call limits: the shapes are large on purpose.
        server = e2e_test.Server("--max_call_memory_bytes", "0", "--max_call_work", "0",
                                 "--max_message_bytes", str(64 << 20), *flags)
        self.addCleanup(server.stop)
        return server

    def inflight(self, server):
        return e2e_test.metric_value(server.metrics_port, "slackswap_inflight_requests")

    def idle_by(self, server, deadline):
        """When the in-flight gauge reads 0 (polled every 20 ms), or None when it
        does not by `deadline`."""
        while time.monotonic() < deadline:
            if self.inflight(server) == 0:
                return time.monotonic()
            time.sleep(0.02)
        return None

    @staticmethod
    def callable(channel, method):
        return channel.unary_unary(f"/slackswap.v1.PlannerService/{method}",
                                   request_serializer=lambda r: r.SerializeToString())

    def start(self, server, channel, method, request, name):
        """The call started, and half a second into its planning."""
        future = self.callable(channel, method).future(request, timeout=300)
        self.wait_busy(server)
        time.sleep(0.5)
        self.assertFalse(future.done(), f"{name} finished in half a second")
        return future

    def wait_busy(self, server):
        end = time.monotonic() + 60
        while self.inflight(server) < 1:
            self.assertLess(time.monotonic(), end, "the call never started")
            time.sleep(0.02)

    def test_a_deadline_stops_the_work(self):
        import grpc
        server = self.server("--planning_threads", "1")
        with server.channel() as channel:
            for name, method, request in self.shapes:
                with self.subTest(shape=name):
                    start = time.monotonic()
                    with self.assertRaises(grpc.RpcError) as failed:
                        self.callable(channel, method)(request, timeout=1)
                    self.assertEqual(failed.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
                    deadline = start + 1
                    idle = self.idle_by(server, deadline + 30)
                    self.assertIsNotNone(idle, "the work never stopped")
                    print(f"\n  {name}: idle {idle - deadline:+.2f} s after the deadline",
                          file=sys.stderr)
                    self.assertLessEqual(idle - deadline, SLACK_S)

    def test_a_cancel_stops_the_work(self):
        server = self.server("--planning_threads", "1")
        with server.channel() as channel:
            for name, method, request in self.shapes:
                with self.subTest(shape=name):
                    future = self.start(server, channel, method, request, name)
                    cancelled = time.monotonic()
                    future.cancel()
                    idle = self.idle_by(server, cancelled + 30)
                    self.assertIsNotNone(idle, "the work never stopped")
                    print(f"\n  {name}: idle {idle - cancelled:+.2f} s after the cancel",
                          file=sys.stderr)
                    self.assertLessEqual(idle - cancelled, SLACK_S)

    def test_sigterm_exits_within_the_grace_period(self):
        for name, method, request in self.shapes:
            with self.subTest(shape=name):
                server = self.server("--grace", "2s", "--planning_threads", "1")
                channel = server.channel()
                self.start(server, channel, method, request, name)
                signalled = time.monotonic()
                server.proc.send_signal(signal.SIGTERM)
                server.proc.wait(timeout=60)
                exited = time.monotonic() - signalled
                channel.close()
                print(f"\n  {name}: exit {exited:.2f} s after SIGTERM", file=sys.stderr)
                self.assertEqual(server.proc.returncode, 0)
                self.assertLessEqual(exited, 2 + SLACK_S)


if __name__ == "__main__":
    e2e_test.main()
