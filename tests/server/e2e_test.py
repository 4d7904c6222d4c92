"""End-to-end tests of the real slackswap-server process, on loopback only.

A Python client (Debian's python3-grpcio, stubs generated here at test time)
plans, checks health and reads error details; the CLI runs against the server
and in-process and must print the same; a real Prometheus server scrapes the
metrics; garbage bytes and requests do not hurt the server.

Also the harness of the other end-to-end tests (limits_e2e_test.py,
tls_e2e_test.py, hardening_e2e_test.py, stop_e2e_test.py and
tests/deploy/live_test.py import it): stub generation, the Server process,
Prometheus, metric_value, and run and main.

Run by ctest: e2e_test.py --server BIN --cli BIN --proto-dir DIR
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import urllib.request

ARGS = None
STUBS = None  # module namespace holder


def generate_stubs(proto_dir, out_dir):
    """Generates Python stubs for the service, google.rpc and health protos.

    Uses the system protoc (3.21, with proto3 optional) and gRPC's Python plugin,
    both from Debian's protobuf-compiler-grpc.
    """
    # health.proto lives under a folder named grpc/, which would shadow the grpc
    # package once generated: copy it under another name first.
    src = os.path.join(out_dir, "src")
    os.makedirs(os.path.join(src, "healthcheck"))
    shutil.copy("/usr/share/grpc-proto/grpc/health/v1/health.proto",
                os.path.join(src, "healthcheck"))
    os.makedirs(os.path.join(src, "reflectioncheck"))
    shutil.copy("/usr/share/grpc-proto/grpc/reflection/v1alpha/reflection.proto",
                os.path.join(src, "reflectioncheck"))
    protos = [
        "slackswap/v1/trace.proto", "slackswap/v1/hardware.proto", "slackswap/v1/plan.proto",
        "slackswap/v1/simulation.proto", "slackswap/v1/planning.proto",
        "slackswap/v1/service.proto", "google/rpc/status.proto", "google/rpc/error_details.proto",
        "healthcheck/health.proto", "reflectioncheck/reflection.proto",
    ]
    subprocess.run(["protoc", f"-I{proto_dir}", f"-I{src}", f"--python_out={out_dir}",
                    f"--grpc_python_out={out_dir}",
                    "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin", *protos],
                   check=True)
    sys.path.insert(0, out_dir)


class Server:
    """A slackswap-server process on an ephemeral loopback port."""

    def __init__(self, *extra, wrapper=()):
        """`extra`: server flags; `wrapper`: a command the server runs under."""
        self.proc = subprocess.Popen(
            [*wrapper, ARGS.server, "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0",
             *extra],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.port = self.metrics_port = self.planning_threads = None
        self.lines = []
        deadline = time.time() + 20
        while time.time() < deadline and None in (self.port, self.metrics_port,
                                                  self.planning_threads):
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            if m := re.match(r"listening on port (\d+)", line):
                self.port = int(m.group(1))
            if m := re.match(r"metrics on port (\d+)", line):
                self.metrics_port = int(m.group(1))
            if m := re.match(r"planning threads (\d+)", line):
                self.planning_threads = int(m.group(1))
        if self.port is None:
            self.proc.kill()
            raise RuntimeError("server did not start: " + "".join(self.lines))
        self.address = f"127.0.0.1:{self.port}"
        # The server logs a line per call: keep reading them, so that the pipe
        # never fills and blocks it.
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    def call_log(self):
        """The JSON call-log lines so far, parsed."""
        return [json.loads(line) for line in list(self.lines) if line.startswith('{"time"')]

    def channel(self, **options):
        import grpc
        return grpc.insecure_channel(self.address, options=[
            ("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1),
            *options.items()])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(timeout=10)
        self.proc.stdout.close()


def metric_value(metrics_port, name, labels=None):
    """Sums a series from a server's /metrics text (0 when it has none)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as r:
        text = r.read().decode()
    total = 0.0
    for line in text.splitlines():
        if (line.startswith(name + "{") or line.startswith(name + " ")) and all(
                f'{k}="{v}"' in line for k, v in (labels or {}).items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def genetic_search_compare(generated, evaluations):
    """A Compare that keeps a planning thread busy: a genetic search at 50%."""
    from slackswap.v1 import plan_pb2, planning_pb2, service_pb2
    return service_pb2.CompareRequest(
        trace=generated.trace, hardware=generated.hardware,
        budgets=[plan_pb2.Budget(fraction_of_peak=0.5)],
        policies=[planning_pb2.POLICY_GENETIC_SEARCH], genetic_search_evaluations=evaluations)


def generated_trace(stub, preset="llama-7b", layers=4):
    from slackswap.v1 import service_pb2
    return stub.GenerateTrace(service_pb2.GenerateTraceRequest(
        workload_preset=preset, hardware_preset="a100", layers=layers), timeout=30)


class ServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server()
        from slackswap.v1 import service_pb2_grpc
        cls.channel = cls.server.channel()
        cls.stub = service_pb2_grpc.PlannerServiceStub(cls.channel)
        cls.generated = generated_trace(cls.stub)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.server.stop()

    def plan_request(self, fraction=0.5):
        from slackswap.v1 import plan_pb2, service_pb2
        return service_pb2.PlanRequest(trace=self.generated.trace, hardware=self.generated.hardware,
                                       budget=plan_pb2.Budget(fraction_of_peak=fraction))

    def test_python_client_plans_and_checks_health(self):
        from healthcheck import health_pb2, health_pb2_grpc
        from slackswap.v1 import planning_pb2
        import grpc
        response = self.stub.Plan(self.plan_request(0.5), timeout=30)
        report = response.report
        self.assertEqual(report.outcome, planning_pb2.PLAN_OUTCOME_PLANNED)
        self.assertLessEqual(report.metrics.peak_resident_bytes, report.metrics.budget_bytes)
        self.assertGreater(report.metrics.throughput_ratio, 0.5)
        self.assertLessEqual(report.lower_bound_ns, report.metrics.iteration_ns)
        health = health_pb2_grpc.HealthStub(self.channel)
        for service in ("", "slackswap.v1.PlannerService"):
            status = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status
            self.assertEqual(status, health_pb2.HealthCheckResponse.SERVING, service)
        with self.assertRaises(grpc.RpcError) as unknown:
            health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=5)
        self.assertEqual(unknown.exception.code(), grpc.StatusCode.NOT_FOUND)

    def test_reflection_lists_the_services(self):
        from reflectioncheck import reflection_pb2, reflection_pb2_grpc
        stub = reflection_pb2_grpc.ServerReflectionStub(self.channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        responses = list(stub.ServerReflectionInfo(iter([request]), timeout=10))
        names = {s.name for s in responses[0].list_services_response.service}
        self.assertIn("slackswap.v1.PlannerService", names)
        self.assertIn("grpc.health.v1.Health", names)
        # Each service can be described, the health service too.
        from google.protobuf import descriptor_pb2
        for service, file in (("slackswap.v1.PlannerService", "slackswap/v1/service.proto"),
                              ("grpc.health.v1.Health", "grpc/health/v1/health.proto")):
            request = reflection_pb2.ServerReflectionRequest(file_containing_symbol=service)
            (response,) = stub.ServerReflectionInfo(iter([request]), timeout=10)
            self.assertFalse(response.HasField("error_response"), (service, response))
            files = [descriptor_pb2.FileDescriptorProto.FromString(b)
                     for b in response.file_descriptor_response.file_descriptor_proto]
            self.assertIn(file, [f.name for f in files])

    def test_invalid_argument_carries_bad_request_field_violations(self):
        import grpc
        from google.rpc import error_details_pb2, status_pb2
        request = self.plan_request()
        request.trace.tensors[3].use_ops[0] = 999999
        with self.assertRaises(grpc.RpcError) as error:
            self.stub.Plan(request, timeout=30)
        self.assertEqual(error.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        details = dict(error.exception.trailing_metadata())["grpc-status-details-bin"]
        status = status_pb2.Status.FromString(details)
        bad_request = error_details_pb2.BadRequest()
        self.assertTrue(status.details[0].Unpack(bad_request))
        self.assertEqual(bad_request.field_violations[0].field, "trace.tensors[3].use_ops[0]")
        self.assertLess(len(error.exception.details()), 600)

    def test_cli_prints_the_same_against_the_server(self):
        with tempfile.TemporaryDirectory() as work:
            trace = os.path.join(work, "trace.pb")
            with open(trace, "wb") as f:
                f.write(self.generated.trace.SerializeToString())
            commands = [
                ["plan", "--budget", "0.5"],
                ["simulate", "--policy", "all-swap", "--budget", "0.5"],
                ["compare", "--budgets", "0.4,0.6", "--policies", "slackswap,vdnn,checkpointing"],
                ["frontier", "--target", "0.95", "--fractions", "0.3,0.5,0.7"],
            ]
            for command in commands:
                args = [ARGS.cli, *command, "--trace", trace, "--hardware", "a100"]
                local = subprocess.run(args, capture_output=True, text=True, timeout=120)
                remote = subprocess.run(args + ["--server", self.server.address],
                                        capture_output=True, text=True, timeout=120)
                self.assertEqual(local.returncode, 0, local.stderr)
                self.assertEqual(remote.returncode, 0, remote.stderr)
                strip = lambda s: re.sub(r"planned in [0-9.]+ ms", "planned in X ms", s)
                self.assertEqual(strip(local.stdout), strip(remote.stdout), command)
            # An error from the server keeps its field path.
            bad = subprocess.run([ARGS.cli, "generate", "--preset", "gpt2-xl", "--batch", "-3",
                                  "--server", self.server.address],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(bad.returncode, 1)
            self.assertIn("batch", bad.stderr)
            # Two violations found by the server: the remote call fails as the
            # local one does, every field violation listed.
            args = [ARGS.cli, "generate", "--preset", "gpt2-xl", "--batch", "-3", "--seq", "-5"]
            local = subprocess.run(args, capture_output=True, text=True, timeout=60)
            remote = subprocess.run(args + ["--server", self.server.address],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual((local.returncode, remote.returncode), (1, 1))
            self.assertEqual(local.stderr, remote.stderr)
            listed = [line.strip() for line in remote.stderr.splitlines()
                      if line.startswith("  ")]
            self.assertEqual([line.split(":")[0] for line in listed],
                             ["batch", "sequence_length"], remote.stderr)

    def test_bench_server_reports_the_cpu_time_of_the_process_it_is_given(self):
        with tempfile.TemporaryDirectory() as work:
            trace = os.path.join(work, "trace.pb")
            with open(trace, "wb") as f:
                f.write(self.generated.trace.SerializeToString())
            idle = subprocess.Popen(["sleep", "60"])
            try:
                reports = {}
                for name, pid in (("server", self.server.proc.pid), ("idle", idle.pid)):
                    run = subprocess.run(
                        [ARGS.cli, "bench-server", "--server", self.server.address,
                         "--server_pid", str(pid), "--trace", trace, "--hardware", "a100",
                         "--budget", "0.5", "--concurrency", "4", "--duration", "1s", "--json"],
                        capture_output=True, text=True, timeout=60)
                    self.assertEqual(run.returncode, 0, run.stderr)
                    reports[name] = json.loads(run.stdout)
            finally:
                idle.kill()
                idle.wait()
            for report in reports.values():
                self.assertGreater(report["ok"], 0)
                self.assertGreater(report["cpu_seconds"], 0)
            # The server planned every call; the sleeping process did nothing.
            self.assertGreater(reports["server"]["server_cpu_seconds"], 0.05)
            self.assertEqual(reports["idle"]["server_cpu_seconds"], 0)

    def test_each_call_logs_one_json_line_with_its_request_id(self):
        import grpc
        from slackswap.v1 import service_pb2
        metadata = [("x-request-id", "req-42"),
                    ("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")]
        self.stub.Plan(self.plan_request(0.5), timeout=30, metadata=metadata)
        with self.assertRaises(grpc.RpcError):
            self.stub.Plan(service_pb2.PlanRequest(trace=self.generated.trace), timeout=30,
                           metadata=[("x-request-id", "req-43")])
        deadline = time.time() + 10
        while time.time() < deadline:
            lines = {line.get("request_id"): line for line in self.server.call_log()}
            if "req-42" in lines and "req-43" in lines:
                break
            time.sleep(0.05)
        ok, bad = lines["req-42"], lines["req-43"]
        self.assertEqual((ok["method"], ok["code"], ok["level"], ok["msg"]),
                         ("Plan", "OK", "info", "call"))
        self.assertEqual(ok["traceparent"], metadata[1][1])
        self.assertEqual(ok["trace_operators"], len(self.generated.trace.operators))
        self.assertEqual(ok["trace_tensors"], len(self.generated.trace.tensors))
        self.assertEqual(ok["request_bytes"], self.plan_request(0.5).ByteSize())
        self.assertGreater(ok["response_bytes"], 0)
        self.assertGreaterEqual(ok["duration_ms"], ok["queue_wait_ms"])
        self.assertTrue(ok["peer"].startswith("ipv4:127.0.0.1:"), ok["peer"])
        self.assertRegex(ok["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
        self.assertNotIn("error", ok)
        self.assertEqual(bad["code"], "INVALID_ARGUMENT")
        self.assertIn("hardware", bad["error"])

    def test_timeline_export_from_the_cli_and_from_python_agree(self):
        import importlib.util
        from slackswap.v1 import plan_pb2, service_pb2, simulation_pb2
        repo = os.path.dirname(os.path.abspath(ARGS.proto_dir))
        spec = importlib.util.spec_from_file_location(
            "timeline", os.path.join(repo, "client", "python", "slackswap_client", "timeline.py"))
        timeline = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(timeline)
        name = "all-swap at 30%: llama-7b"
        with tempfile.TemporaryDirectory() as work:
            with open(os.path.join(work, "t.pb"), "wb") as f:
                f.write(self.generated.trace.SerializeToString())
            subprocess.run([ARGS.cli, "simulate", "--trace", os.path.join(work, "t.pb"),
                            "--hardware", "a100", "--budget", "0.3", "--policy", "all-swap",
                            "--plan_out", os.path.join(work, "plan.pb"), "--timeline",
                            os.path.join(work, "cli.json"), "--timeline_name", name],
                           check=True, capture_output=True, timeout=60)
            with open(os.path.join(work, "cli.json")) as f:
                from_cli = f.read()
            with open(os.path.join(work, "plan.pb"), "rb") as f:
                plan = plan_pb2.Plan.FromString(f.read())
        response = self.stub.Simulate(service_pb2.SimulateRequest(
            trace=self.generated.trace, hardware=self.generated.hardware,
            budget=plan_pb2.Budget(fraction_of_peak=0.3), plan=plan, include_timeline=True),
            timeout=30)
        from_python = timeline.chrome_trace_json(self.generated.trace, response.timeline,
                                                 response.metrics, name)
        self.assertEqual(from_python, from_cli)
        # With node physics the slowed slices carry slowed_ns, alike in both.
        with tempfile.TemporaryDirectory() as work:
            with open(os.path.join(work, "t.pb"), "wb") as f:
                f.write(self.generated.trace.SerializeToString())
            with open(os.path.join(work, "plan.pb"), "wb") as f:
                f.write(plan.SerializeToString())
            subprocess.run([ARGS.cli, "simulate", "--trace", os.path.join(work, "t.pb"),
                            "--hardware", "a100", "--budget", "0.3", "--plan",
                            os.path.join(work, "plan.pb"), "--gpus_per_link", "2",
                            "--uplink_gbps", "25", "--hbm_contention", "--timeline",
                            os.path.join(work, "node.json"), "--timeline_name", name],
                           check=True, capture_output=True, timeout=60)
            with open(os.path.join(work, "node.json")) as f:
                node_cli = f.read()
        hardware = type(self.generated.hardware)()
        hardware.CopyFrom(self.generated.hardware)
        hardware.gpus_per_uplink = 2
        hardware.uplink_d2h_bytes_per_second = 25 * 10**9
        hardware.uplink_h2d_bytes_per_second = 25 * 10**9
        shared = self.stub.Simulate(service_pb2.SimulateRequest(
            trace=self.generated.trace, hardware=hardware,
            budget=plan_pb2.Budget(fraction_of_peak=0.3), plan=plan, include_timeline=True,
            physics=simulation_pb2.Physics(hbm_contention=True)), timeout=30)
        self.assertEqual(timeline.chrome_trace_json(self.generated.trace, shared.timeline,
                                                    shared.metrics, name), node_cli)
        self.assertIn('"slowed_ns":', node_cli)
        events = json.loads(from_cli)["traceEvents"]
        names = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
        self.assertEqual(names, {name})
        self.assertEqual({e["pid"] for e in events}, {timeline.process_id(name)})
        slices = [e for e in events if e["ph"] == "X"]
        self.assertLessEqual({"op", "offload", "prefetch", "stall"}, {e["cat"] for e in slices})
        # Labelled stall slices that add up to the metrics' waits.
        stalls = [e for e in slices if e["cat"] == "stall"]
        waited = (response.metrics.prefetch_wait_ns + response.metrics.memory_wait_ns +
                  response.metrics.barrier_wait_ns)
        self.assertGreater(waited, 0)
        self.assertAlmostEqual(sum(e["dur"] for e in stalls) * 1000, waited, delta=len(stalls))
        self.assertTrue(all(e["name"] == "stall: " + e["args"]["cause"] for e in stalls))
        # Bytes in the transfers' args, and the budget as a counter.
        offload = next(e for e in slices if e["cat"] == "offload")
        self.assertEqual(offload["args"]["bytes"],
                         self.generated.trace.tensors[offload["args"]["index"]].size_bytes)
        budget = [e for e in events if e.get("name") == "budget_bytes"]
        self.assertEqual([e["args"]["bytes"] for e in budget],
                         [response.metrics.budget_bytes] * 2)

    def test_help_lists_the_flags_and_version_names_the_build(self):
        # A successful --help exits 0 with the flags on standard output, on both
        # binaries; an unknown flag still fails.
        for binary, flags in ((ARGS.server, ("--listen", "--metrics", "--max_concurrent_requests",
                                             "--tls_cert", "--grace", "--max_call_work")),
                              (ARGS.cli, ("--budget", "--search_ms", "--uplink_gbps"))):
            helped = subprocess.run([binary, "--help"], capture_output=True, text=True,
                                    timeout=30)
            self.assertEqual(helped.returncode, 0, helped.stderr)
            for flag in flags:
                self.assertIn(flag, helped.stdout)
            wrong = subprocess.run([binary, "--no_such_flag"], capture_output=True, text=True,
                                   timeout=30)
            self.assertNotEqual(wrong.returncode, 0)
            self.assertIn("no_such_flag", wrong.stderr)
        versioned = subprocess.run([ARGS.server, "--version"], capture_output=True, text=True,
                                   timeout=30)
        self.assertEqual(versioned.returncode, 0, versioned.stderr)
        self.assertRegex(versioned.stdout, r"^slackswap-server \d+\.\d+\.\d+ \(revision \S+\)\n$")

    def test_garbage_bytes_do_not_hurt_the_server(self):
        import grpc
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=5) as s:
            s.sendall(os.urandom(4096))
            try:
                s.recv(1024)
            except OSError:
                pass
        raw = self.channel.unary_unary("/slackswap.v1.PlannerService/Plan",
                                       request_serializer=lambda b: b,
                                       response_deserializer=lambda b: b)
        with self.assertRaises(grpc.RpcError) as error:
            raw(b"\xff\xff\xff\xff\x0f\x12garbage", timeout=10)
        self.assertEqual(error.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("slackswap.v1.PlanRequest", error.exception.details())
        self.assertIsNone(self.server.proc.poll())
        self.stub.Plan(self.plan_request(0.6), timeout=30)

    def test_offload_traffic_reaches_plan_compare_frontier_and_the_metrics(self):
        from slackswap.v1 import plan_pb2, planning_pb2, service_pb2
        planned = planning_pb2.PLAN_OUTCOME_PLANNED
        generated = self.stub.GenerateTrace(service_pb2.GenerateTraceRequest(
            workload_preset="gpt2-xl", hardware_preset="a100", layers=4,
            offload=service_pb2.OFFLOAD_FSDP_CPU), timeout=30)
        # Per layer a forward and a backward parameter fetch and a gradient copy.
        self.assertEqual(len(generated.trace.fixed_transfers), 3 * 4)
        request = service_pb2.PlanRequest(trace=generated.trace, hardware=generated.hardware,
                                          budget=plan_pb2.Budget(fraction_of_peak=0.5))
        report = self.stub.Plan(request, timeout=30).report
        self.assertEqual(report.outcome, planned, report.reason)
        self.assertGreater(report.metrics.fixed_transfer_wait_ns, 0)
        self.assertLessEqual(report.lower_bound_ns, report.metrics.iteration_ns)
        self.assertGreater(metric_value(self.server.metrics_port,
                                        "slackswap_plan_fixed_transfer_wait_seconds_sum",
                                        {"policy": "slackswap"}), 0)
        # Every policy replays with the traffic: none is faster than the bound.
        compare = self.stub.Compare(service_pb2.CompareRequest(
            trace=generated.trace, hardware=generated.hardware,
            budgets=[plan_pb2.Budget(fraction_of_peak=0.5)],
            policies=[planning_pb2.POLICY_SLACKSWAP, planning_pb2.POLICY_VDNN,
                      planning_pb2.POLICY_CHECKPOINTING]), timeout=60).comparison
        entries = [e for e in compare.entries if e.report.outcome == planned]
        self.assertGreaterEqual(len(entries), 2)
        for e in entries:
            self.assertGreater(e.report.metrics.fixed_transfer_wait_ns, 0, e.policy)
            self.assertGreaterEqual(e.report.metrics.iteration_ns, report.lower_bound_ns, e.policy)
        # With the whole peak, all-keep still waits for the parameters.
        frontier = self.stub.Frontier(service_pb2.FrontierRequest(
            trace=generated.trace, hardware=generated.hardware, budget_fractions=[0.5, 1.0]),
            timeout=60)
        full = [p for p in frontier.points if p.budget_fraction_of_peak == 1.0]
        self.assertEqual(len(full), 1)
        self.assertEqual(full[0].outcome, planned)
        self.assertLess(full[0].throughput_ratio, 1.0)

    def test_node_physics_from_python_reach_the_plan_and_the_metrics(self):
        from slackswap.v1 import plan_pb2, planning_pb2, service_pb2, simulation_pb2
        request = self.plan_request(0.4)
        request.hardware.gpus_per_uplink = 2
        request.hardware.uplink_d2h_bytes_per_second = request.hardware.d2h_bytes_per_second
        request.hardware.uplink_h2d_bytes_per_second = request.hardware.h2d_bytes_per_second
        request.physics.allocator = simulation_pb2.ALLOCATOR_MODEL_CACHING
        request.physics.hbm_contention = True
        report = self.stub.Plan(request, timeout=30).report
        self.assertEqual(report.outcome, planning_pb2.PLAN_OUTCOME_PLANNED, report.reason)
        self.assertGreater(report.metrics.uplink_wait_ns, 0)
        self.assertGreaterEqual(report.metrics.peak_reserved_bytes,
                                report.metrics.peak_resident_bytes)
        port = self.server.metrics_port
        self.assertGreaterEqual(metric_value(port, "slackswap_plan_reserved_bytes_count",
                                             {"policy": "slackswap"}), 1)
        self.assertGreater(metric_value(port, "slackswap_plan_uplink_wait_seconds_sum",
                                        {"policy": "slackswap"}), 0)
        node = service_pb2.PlanNodeRequest(hardware=request.hardware)
        for fraction in (0.4, 0.6):
            node.jobs.add(name=f"job-{fraction}", trace=request.trace, gpus=2,
                          budget=plan_pb2.Budget(fraction_of_peak=fraction))
        answer = self.stub.PlanNode(node, timeout=60)
        self.assertEqual([j.name for j in answer.jobs], ["job-0.4", "job-0.6"])
        for job in answer.jobs:
            self.assertEqual(job.outcome, planning_pb2.PLAN_OUTCOME_PLANNED, job.reason)
            self.assertGreaterEqual(job.shared_step_ns, job.report.metrics.ideal_ns)
        self.assertGreaterEqual(metric_value(port, "slackswap_plans_total",
                                             {"grpc_method": "PlanNode"}), 2)

    def test_prometheus_scrapes_rpc_and_plan_quality_metrics(self):
        from slackswap.v1 import service_pb2
        for fraction in (0.3, 0.5, 0.7):
            self.stub.Plan(self.plan_request(fraction), timeout=30)
        # Frontier points are counted as plans under their method, and stay
        # out of the quality of the plans Plan calls return.
        request = self.plan_request(0.5)
        self.stub.Frontier(service_pb2.FrontierRequest(trace=request.trace,
                                                       hardware=request.hardware), timeout=60)
        port = self.server.metrics_port
        self.assertGreater(metric_value(port, "slackswap_plans_total",
                                        {"grpc_method": "Frontier"}), 5)
        self.assertEqual(metric_value(port, "slackswap_plan_throughput_ratio_count",
                                      {"policy": "slackswap"}),
                         metric_value(port, "slackswap_plans_total",
                                      {"grpc_method": "Plan", "policy": "slackswap",
                                       "outcome": "planned"}))
        with Prometheus(self.server.metrics_port) as prom:
            checks = {
                'grpc_server_handled_total{grpc_method="Plan",grpc_code="OK"}': 1,
                'slackswap_plans_total{policy="slackswap",outcome="planned"}': 1,
                'slackswap_plan_throughput_ratio_count{policy="slackswap"}': 1,
                'grpc_server_handling_seconds_count{grpc_method="Plan"}': 1,
                'slackswap_queue_wait_seconds_count{grpc_method="Plan"}': 1,
                "slackswap_build_info": 1,
                'slackswap_build_info{revision!=""}': 1,
            }
            for query, minimum in checks.items():
                self.assertGreaterEqual(prom.wait_for(query, minimum), minimum, query)
            quantile = prom.query(
                "histogram_quantile(0.5, sum by (le) (slackswap_plan_throughput_ratio_bucket))")
            self.assertTrue(quantile and 0 < float(quantile[0]["value"][1]) <= 1, quantile)


class Prometheus:
    """A real Prometheus server on loopback scraping one target every second."""

    def __init__(self, target_port):
        self.target_port = target_port

    def __enter__(self):
        self.dir = tempfile.mkdtemp()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: slackswap\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{self.target_port}']\n")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={self.dir}/data",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def query(self, promql):
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode(
            {"query": promql})
        with urllib.request.urlopen(url, timeout=5) as response:
            body = json.load(response)
        if body.get("status") != "success":
            raise RuntimeError(f"query failed: {promql}: {body}")
        return body["data"]["result"]

    def wait_for(self, promql, minimum, timeout=60):
        """Polls until the query's first value reaches `minimum`; returns the last value."""
        deadline, value = time.time() + timeout, -1.0
        while time.time() < deadline:
            try:
                result = self.query(promql)
                if result:
                    value = float(result[0]["value"][1])
                    if value >= minimum:
                        return value
            except (OSError, RuntimeError):
                pass  # not up yet, or no scrape yet
            time.sleep(0.5)
        return value


def run(parser, before=None):
    """Parses the arguments (into ARGS), generates the stubs, runs the tests of
    __main__ and exits 0 if they pass. `before(args)` runs first."""
    global ARGS
    ARGS, rest = parser.parse_known_args()
    if before is not None:
        before(ARGS)
    stubs = tempfile.mkdtemp()
    try:
        generate_stubs(ARGS.proto_dir, stubs)
        program = unittest.main(module="__main__", argv=[sys.argv[0], *rest], exit=False,
                                verbosity=2)
        result = program.result
        failed = len(result.failures) + len(result.errors)
        skipped = len(result.skipped)
        print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
        sys.exit(0 if result.wasSuccessful() else 1)
    finally:
        shutil.rmtree(stubs, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--cli", required=True)
    parser.add_argument("--proto-dir", required=True)
    run(parser)


if __name__ == "__main__":
    main()
