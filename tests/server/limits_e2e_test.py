"""End-to-end tests of the real slackswap-server's limits and lifecycle, on
loopback only: overload refused fast, a busy refusal with its retry info and
the recommended retry policy riding it out, keepalive pings, compressed
responses, planning threads and the queue wait, oversized requests, graceful
shutdown under load, and determinism across two server processes.

Run by ctest: limits_e2e_test.py --server BIN --cli BIN --proto-dir DIR
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402  (the harness: ARGS once parsed, main)
from e2e_test import Server, generated_trace, genetic_search_compare, metric_value  # noqa: E402


class CountingRelay:
    """A loopback TCP relay to `port` that counts the bytes it passes back."""

    def __init__(self, port):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.port = self.listener.getsockname()[1]
        self.target = port
        self.back = 0
        self.threads = []
        self.accepter = threading.Thread(target=self._accept, daemon=True)
        self.accepter.start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            for src, dst, back in ((client, upstream, False), (upstream, client, True)):
                t = threading.Thread(target=self._pump, args=(src, dst, back), daemon=True)
                t.start()
                self.threads.append(t)

    def _pump(self, src, dst, back):
        try:
            while data := src.recv(65536):
                if back:
                    self.back += len(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop(self):
        """Closes the relay; returns the bytes it passed back."""
        self.listener.close()
        for t in self.threads:
            t.join(timeout=5)
        return self.back


def trace_pb2_from(data):
    from slackswap.v1 import trace_pb2
    return trace_pb2.Trace.FromString(data)


def sigterm_under(server, caller, count, after):
    """Starts `count` threads running `caller`, sends the server SIGTERM
    `after` seconds later, and returns the threads and when it was sent."""
    threads = [threading.Thread(target=caller) for _ in range(count)]
    for t in threads:
        t.start()
    time.sleep(after)
    sigterm_at = time.time()
    server.proc.send_signal(signal.SIGTERM)
    return threads, sigterm_at


class LimitsTest(unittest.TestCase):
    def test_overload_is_refused_fast_and_accepted_calls_succeed(self):
        import grpc
        from slackswap.v1 import service_pb2_grpc
        from healthcheck import health_pb2, health_pb2_grpc
        server = Server("--max_concurrent_requests", "2")
        try:
            channel = server.channel()
            stub = service_pb2_grpc.PlannerServiceStub(channel)
            g = generated_trace(stub)
            heavy = genetic_search_compare(g, 40000)
            results = []
            lock = threading.Lock()

            def call():
                start = time.time()
                try:
                    stub.Compare(heavy, timeout=120)
                    code = grpc.StatusCode.OK
                except grpc.RpcError as e:
                    code = e.code()
                with lock:
                    results.append((code, time.time() - start))

            threads = [threading.Thread(target=call) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            codes = [c for c, _ in results]
            self.assertGreaterEqual(codes.count(grpc.StatusCode.OK), 2, codes)
            self.assertGreaterEqual(codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED), 1, codes)
            self.assertEqual(len(codes), codes.count(grpc.StatusCode.OK) +
                             codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED), codes)
            refused = [d for c, d in results if c == grpc.StatusCode.RESOURCE_EXHAUSTED]
            served = [d for c, d in results if c == grpc.StatusCode.OK]
            self.assertLess(max(refused), min(served), "refusals must not wait for the work")
            status = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=5).status
            self.assertEqual(status, health_pb2.HealthCheckResponse.SERVING)
            # Refused calls are in the latency histogram too: one sample per
            # counted call.
            compare = {"grpc_method": "Compare"}
            self.assertEqual(
                metric_value(server.metrics_port, "grpc_server_handling_seconds_count", compare),
                metric_value(server.metrics_port, "grpc_server_handled_total", compare))
            channel.close()
        finally:
            server.stop()

    def test_the_recommended_retry_policy_rides_out_a_busy_replica(self):
        """The retry policy of docs/service.md (the Python client's default):
        a call refused by a busy replica is retried after the pushback and
        succeeds; a request over a limit is not retried."""
        import grpc
        from slackswap.v1 import plan_pb2, service_pb2, service_pb2_grpc
        repo = os.path.dirname(os.path.abspath(e2e_test.ARGS.proto_dir))
        sys.path.insert(0, os.path.join(repo, "client", "python"))
        from slackswap_client import client as python_client
        # One policy, wherever it is written.
        policy = python_client.RETRY_SERVICE_CONFIG
        for doc in ("docs/service.md", "deploy/README.md"):
            with open(os.path.join(repo, doc)) as f:
                text = f.read()
            block = text[text.index("```json\n") + 8:]
            documented = json.loads(block[:block.index("```")])
            self.assertEqual(documented["methodConfig"], policy["methodConfig"], doc)

        server = Server("--max_concurrent_requests", "1", "--max_message_bytes", "65536",
                        "--planning_threads", "1")
        try:
            plain = service_pb2_grpc.PlannerServiceStub(server.channel())
            retrying_channel = grpc.insecure_channel(
                server.address, options=python_client.channel_options(retry=True))
            retrying = service_pb2_grpc.PlannerServiceStub(retrying_channel)
            g = generated_trace(plain)
            # A holds the only slot for half a second (its deadline: its search
            # would take seconds), long enough that B's first attempt is refused.
            heavy = generated_trace(plain, "llama-7b", 16)
            held = []

            def hold():
                try:
                    plain.Compare(genetic_search_compare(heavy, 100000), timeout=0.5)
                    held.append(grpc.StatusCode.OK)
                except grpc.RpcError as e:
                    held.append(e.code())
            busy = threading.Thread(target=hold)
            busy.start()
            time.sleep(0.1)
            request = service_pb2.PlanRequest(trace=g.trace, hardware=g.hardware,
                                              budget=plan_pb2.Budget(fraction_of_peak=0.5))
            retrying.Plan(request, timeout=10, metadata=[("x-request-id", "retry-busy")])
            busy.join()
            self.assertEqual(held, [grpc.StatusCode.DEADLINE_EXCEEDED])
            # A request over the size limit is refused once, not five times.
            with tempfile.TemporaryDirectory() as work:
                path = os.path.join(work, "trace.pb")
                subprocess.run([e2e_test.ARGS.cli, "generate", "--preset", "gpt2-xl", "--out",
                                path], check=True, capture_output=True, timeout=60)
                with open(path, "rb") as f:
                    big = trace_pb2_from(f.read())
            with self.assertRaises(grpc.RpcError) as error:
                retrying.Plan(service_pb2.PlanRequest(trace=big, hardware=g.hardware,
                                                      budget=request.budget),
                              timeout=10, metadata=[("x-request-id", "retry-big")])
            self.assertEqual(error.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            retrying_channel.close()
            time.sleep(0.2)
            attempts = {}
            for line in server.call_log():
                attempts.setdefault(line.get("request_id"), []).append(line["code"])
            busy_codes = attempts["retry-busy"]
            self.assertGreaterEqual(len(busy_codes), 2, busy_codes)
            self.assertEqual(busy_codes[-1], "OK", busy_codes)
            self.assertTrue(set(busy_codes[:-1]) == {"RESOURCE_EXHAUSTED"}, busy_codes)
            self.assertEqual(attempts["retry-big"], ["RESOURCE_EXHAUSTED"])
        finally:
            server.stop()

    def test_clients_that_keep_alive_often_keep_their_connection(self):
        """A client that pings every second (gRPC keepalive, also when idle):
        with --min_client_ping_interval at or under its interval the
        connection stays up; with gRPC's default (5 minutes) the server closes
        it (GOAWAY too_many_pings), which fails any call in flight, as gRPC's
        default does to clients that keep alive every 10 to 60 s."""
        import grpc
        states = {}
        for interval in ("1s", "5m"):
            server = Server("--min_client_ping_interval", interval)
            try:
                channel = server.channel(**{"grpc.keepalive_time_ms": 1000,
                                            "grpc.keepalive_permit_without_calls": 1,
                                            "grpc.http2.max_pings_without_data": 0,
                                            "grpc.http2.min_time_between_pings_ms": 1000})
                seen = []
                channel.subscribe(seen.append, try_to_connect=True)
                time.sleep(4.5)
                states[interval] = list(seen)
                channel.close()
            finally:
                server.stop()
        ready = grpc.ChannelConnectivity.READY
        self.assertIn(ready, states["1s"], states)
        self.assertEqual(states["1s"][-1], ready, states)
        # Dropped after a few pings: back to IDLE (or failing) once ready.
        dropped = states["5m"][states["5m"].index(ready) + 1:]
        self.assertTrue(dropped, states)

    def test_responses_are_compressed_for_clients_that_accept_it(self):
        """Bytes from the server to the client, through a counting relay, for
        the same GenerateTrace call (a 67 KB response): compressed by default,
        not with --compress_responses=false; a small Plan response is not
        compressed either way."""
        from slackswap.v1 import service_pb2, service_pb2_grpc
        received = {}
        for flag in ("true", "false"):
            server = Server(f"--compress_responses={flag}")
            relay = CountingRelay(server.port)
            try:
                import grpc
                channel = grpc.insecure_channel(f"127.0.0.1:{relay.port}")
                stub = service_pb2_grpc.PlannerServiceStub(channel)
                response = stub.GenerateTrace(service_pb2.GenerateTraceRequest(
                    workload_preset="gpt2-xl", hardware_preset="a100"), timeout=30)
                channel.close()
                received[flag] = relay.stop()
            finally:
                server.stop()
        size = response.ByteSize()
        self.assertGreater(received["false"], size, received)
        self.assertLess(received["true"], size / 2, (received, size))

    def test_a_busy_refusal_carries_retry_info(self):
        import grpc
        from google.rpc import error_details_pb2, status_pb2
        from slackswap.v1 import service_pb2_grpc
        server = Server("--max_concurrent_requests", "1", "--planning_threads", "1")
        try:
            stub = service_pb2_grpc.PlannerServiceStub(server.channel())
            g = generated_trace(stub, "llama-7b", 16)
            busy = threading.Thread(target=lambda: self.assertRaises(
                grpc.RpcError, stub.Compare, genetic_search_compare(g, 100000), timeout=1.0))
            busy.start()
            time.sleep(0.2)
            with self.assertRaises(grpc.RpcError) as error:
                stub.Compare(genetic_search_compare(g, 100), timeout=10)
            busy.join()
            self.assertEqual(error.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            trailers = dict(error.exception.trailing_metadata())
            self.assertEqual(trailers["grpc-retry-pushback-ms"], "250")
            status = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
            (detail,) = status.details
            retry = error_details_pb2.RetryInfo()
            self.assertTrue(detail.Unpack(retry))
            self.assertEqual(retry.retry_delay.ToMilliseconds(), 250)
        finally:
            server.stop()

    def test_planning_threads_default_to_the_cpus_the_process_may_use(self):
        # Under taskset one CPU is allowed, however many the machine has; the
        # load generator's in-process default follows the same rule.
        one_cpu = ("taskset", "-c", str(min(os.sched_getaffinity(0))))
        server = Server(wrapper=one_cpu)
        try:
            self.assertEqual(server.planning_threads, 1, server.lines)
        finally:
            server.stop()
        server = Server("--planning_threads", "3")
        try:
            self.assertEqual(server.planning_threads, 3, server.lines)
        finally:
            server.stop()
        out = subprocess.run(
            [*one_cpu, e2e_test.ARGS.cli, "bench-server", "--local", "--preset", "llama-7b",
             "--layers", "2", "--concurrency", "3", "--requests", "3", "--json"],
            check=True, capture_output=True, text=True).stdout
        self.assertEqual(json.loads(out)["planning_threads"], 1, out)

    def test_queue_wait_is_the_time_a_call_waits_for_a_planning_thread(self):
        from slackswap.v1 import plan_pb2, service_pb2, service_pb2_grpc
        server = Server("--planning_threads", "1")
        try:
            channel = server.channel()
            stub = service_pb2_grpc.PlannerServiceStub(channel)
            g = generated_trace(stub)
            heavy = genetic_search_compare(g, 100000)
            compare = threading.Thread(target=lambda: stub.Compare(heavy, timeout=120))
            compare.start()
            deadline = time.time() + 30
            while (metric_value(server.metrics_port, "slackswap_inflight_requests") < 1
                   and time.time() < deadline):
                time.sleep(0.005)
            # The one planning thread is busy with the Compare: the Plan waits.
            start = time.time()
            stub.Plan(service_pb2.PlanRequest(
                trace=g.trace, hardware=g.hardware,
                budget=plan_pb2.Budget(fraction_of_peak=0.5)), timeout=120)
            latency = time.time() - start
            compare.join()
            series = "slackswap_queue_wait_seconds"
            plan = {"grpc_method": "Plan"}
            self.assertEqual(metric_value(server.metrics_port, series + "_count", plan), 1)
            self.assertEqual(metric_value(server.metrics_port, series + "_count",
                                          {"grpc_method": "Compare"}), 1)
            waited = metric_value(server.metrics_port, series + "_sum", plan)
            planning = metric_value(server.metrics_port, "slackswap_planning_seconds_sum",
                                    {"policy": "slackswap"})
            # Planning this small trace takes well under a millisecond; the rest
            # of the Plan's latency was the wait behind the Compare.
            self.assertGreater(waited, 10 * planning, (waited, planning, latency))
            self.assertGreater(waited, 0.5 * latency, (waited, latency))
            self.assertLessEqual(waited, latency)
            channel.close()
        finally:
            server.stop()

    def test_oversized_request_is_resource_exhausted(self):
        import grpc
        from slackswap.v1 import plan_pb2, service_pb2, service_pb2_grpc
        server = Server("--max_message_bytes", "65536")
        try:
            channel = server.channel()
            stub = service_pb2_grpc.PlannerServiceStub(channel)
            from slackswap.v1 import trace_pb2

            def trace(layers):
                with tempfile.TemporaryDirectory() as work:
                    path = os.path.join(work, "trace.pb")
                    subprocess.run([e2e_test.ARGS.cli, "generate", "--preset", "gpt2-xl",
                                    "--layers", str(layers), "--out", path],
                                   check=True, capture_output=True, timeout=60)
                    with open(path, "rb") as f:
                        return trace_pb2.Trace.FromString(f.read())

            # Over twice the limit gRPC drops the request before the service
            # sees it.
            big = trace(150)
            self.assertGreater(big.ByteSize(), 2 * 65536)
            small = generated_trace(stub, "llama-7b", 2)
            with self.assertRaises(grpc.RpcError) as error:
                stub.Plan(service_pb2.PlanRequest(trace=big, hardware=small.hardware,
                                                  budget=plan_pb2.Budget(fraction_of_peak=0.5)),
                          timeout=30)
            self.assertEqual(error.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            # Between the limit and twice it, the service itself refuses the
            # request, says why, and counts it.
            medium = trace(48)
            self.assertGreater(medium.ByteSize(), 65536)
            self.assertLess(medium.ByteSize(), 2 * 65536)
            with self.assertRaises(grpc.RpcError) as error:
                stub.Plan(service_pb2.PlanRequest(trace=medium, hardware=small.hardware,
                                                  budget=plan_pb2.Budget(fraction_of_peak=0.5)),
                          timeout=30)
            self.assertEqual(error.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            self.assertIn("over the server's limit of 65536", error.exception.details())
            # A response over the limit is refused, not counted as OK.
            with self.assertRaises(grpc.RpcError) as error:
                stub.GenerateTrace(service_pb2.GenerateTraceRequest(
                    workload_preset="gpt2-xl", hardware_preset="a100"), timeout=30)
            self.assertEqual(error.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            self.assertIn("response:", error.exception.details())
            stub.Plan(service_pb2.PlanRequest(trace=small.trace, hardware=small.hardware,
                                              budget=plan_pb2.Budget(fraction_of_peak=0.8)),
                      timeout=30)
            port = server.metrics_port
            exhausted = {"grpc_code": "RESOURCE_EXHAUSTED"}
            self.assertEqual(metric_value(port, "grpc_server_handled_total",
                                          {**exhausted, "grpc_method": "Plan"}), 1)
            self.assertEqual(metric_value(port, "grpc_server_handled_total",
                                          {**exhausted, "grpc_method": "GenerateTrace"}), 1)
            self.assertEqual(metric_value(port, "grpc_server_handled_total",
                                          {"grpc_code": "OK", "grpc_method": "Plan"}), 1)
            # Sizes: the two Plan requests that reached the service, and the
            # capacity the server was started with.
            self.assertEqual(metric_value(port, "slackswap_request_bytes_count",
                                          {"grpc_method": "Plan"}), 2)
            self.assertGreater(metric_value(port, "slackswap_request_bytes_sum",
                                            {"grpc_method": "Plan"}), 70000)
            self.assertGreater(metric_value(port, "slackswap_response_bytes_count",
                                            {"grpc_method": "GenerateTrace"}), 0)
            self.assertEqual(metric_value(port, "slackswap_max_concurrent_requests"), 8)
            self.assertGreater(metric_value(port, "process_resident_memory_bytes"), 1e6)
            self.assertGreater(metric_value(port, "process_open_fds"), 3)
            self.assertGreater(metric_value(port, "process_start_time_seconds"),
                               time.time() - 3600)
            channel.close()
        finally:
            server.stop()

    def test_plans_are_identical_across_server_processes(self):
        from slackswap.v1 import plan_pb2, planning_pb2, service_pb2, service_pb2_grpc
        servers = [Server(), Server()]
        try:
            reports = []
            for server in servers:
                channel = server.channel()
                stub = service_pb2_grpc.PlannerServiceStub(channel)
                g = generated_trace(stub, "llama-7b", 8)
                response = stub.Plan(service_pb2.PlanRequest(
                    trace=g.trace, hardware=g.hardware,
                    budget=plan_pb2.Budget(fraction_of_peak=0.4)), timeout=30)
                self.assertEqual(response.report.outcome, planning_pb2.PLAN_OUTCOME_PLANNED)
                self.assertEqual(len(response.report.plan.tensors), len(g.trace.tensors))
                reports.append(response.report.SerializeToString(deterministic=True))
                channel.close()
            self.assertEqual(reports[0], reports[1])
        finally:
            for server in servers:
                server.stop()

    def test_an_idle_server_exits_once_drained(self):
        """After its metrics endpoint served a scrape (prometheus-cpp's exposer
        held the exit about 2 s), a drained server exits at once."""
        server = Server()
        try:
            self.assertEqual(metric_value(server.metrics_port, "slackswap_build_info"), 1)
            start = time.monotonic()
            server.proc.send_signal(signal.SIGTERM)
            self.assertEqual(server.proc.wait(timeout=30), 0)
            self.assertLess(time.monotonic() - start, 1.5)
        finally:
            server.stop()

    def test_sigterm_under_load_loses_no_accepted_call(self):
        import grpc
        from slackswap.v1 import service_pb2_grpc
        from healthcheck import health_pb2, health_pb2_grpc
        server = Server("--max_concurrent_requests", "8", "--grace", "30s")
        channel = server.channel()
        stub = service_pb2_grpc.PlannerServiceStub(channel)
        g = generated_trace(stub)
        work = genetic_search_compare(g, 20000)
        outcomes = []
        lock = threading.Lock()
        stop_at = time.time() + 4

        def caller():
            while time.time() < stop_at:
                start = time.time()
                try:
                    stub.Compare(work, timeout=60)
                    code = grpc.StatusCode.OK
                except grpc.RpcError as e:
                    code = e.code()
                with lock:
                    outcomes.append((code, start, time.time()))
                if code != grpc.StatusCode.OK:
                    return

        threads, sigterm_at = sigterm_under(server, caller, 4, after=1.5)
        # While the calls in flight finish, the server refuses new ones itself,
        # with a retryable UNAVAILABLE that says why (gRPC's own shutdown would
        # end them CANCELLED). A call that reaches it before it has seen the
        # signal is accepted and waits behind the calls in flight (seconds
        # under the sanitizers, past this loop's window): probe once health
        # says NOT_SERVING, which the drain sets as it stops admitting.
        health = health_pb2_grpc.HealthStub(channel)
        while time.time() < sigterm_at + 5:
            try:
                status = health.Check(
                    health_pb2.HealthCheckRequest(service=""), timeout=5).status
            except grpc.RpcError:
                break
            if status != health_pb2.HealthCheckResponse.SERVING:
                break
            time.sleep(0.01)
        refusal = None
        while refusal is None and time.time() < sigterm_at + 5:
            try:
                generated_trace(stub, layers=1)
            except grpc.RpcError as e:
                refusal = e
        self.assertIsNotNone(refusal)
        self.assertEqual(refusal.code(), grpc.StatusCode.UNAVAILABLE, refusal.details())
        self.assertIn("draining", refusal.details())
        exit_code = server.proc.wait(timeout=40)
        exited_after = time.time() - sigterm_at
        for t in threads:
            t.join()
        channel.close()
        self.assertEqual(exit_code, 0)
        self.assertLess(exited_after, 30)
        codes = {c for c, _, _ in outcomes}
        self.assertTrue(codes <= {grpc.StatusCode.OK, grpc.StatusCode.UNAVAILABLE}, outcomes)
        in_flight_at_sigterm = [o for o in outcomes
                                if o[0] == grpc.StatusCode.OK and o[1] < sigterm_at < o[2]]
        self.assertGreaterEqual(len(in_flight_at_sigterm), 1, outcomes)
        server.reader.join(timeout=10)
        output = "".join(server.lines)
        server.proc.stdout.close()
        self.assertIn("draining", output)

    def test_a_drain_under_endless_calls_ends_long_before_its_grace(self):
        # Clients that do not know of the drain (a static address list) keep
        # calling: each call is refused, and the server still shuts down soon
        # after its calls in flight are done (then its GOAWAY moves them on),
        # not when its 30 s grace ends.
        import grpc
        from slackswap.v1 import service_pb2_grpc
        server = Server("--grace", "30s")
        channel = server.channel()
        stub = service_pb2_grpc.PlannerServiceStub(channel)
        generated_trace(stub, layers=1)
        refused = []
        done = threading.Event()

        def caller():
            while not done.is_set():
                try:
                    generated_trace(stub, layers=1)
                except grpc.RpcError as e:
                    if "draining" in (e.details() or ""):
                        refused.append(e.code())
                time.sleep(0.01)

        threads, sigterm_at = sigterm_under(server, caller, 2, after=0.5)
        try:
            exit_code = server.proc.wait(timeout=40)
            exited_after = time.time() - sigterm_at
        finally:
            done.set()
            for t in threads:
                t.join()
            channel.close()
        self.assertEqual(exit_code, 0)
        self.assertGreater(len(refused), 0)
        self.assertEqual(set(refused), {grpc.StatusCode.UNAVAILABLE})
        self.assertLess(exited_after, 10)


if __name__ == "__main__":
    e2e_test.main()
