"""Live checks of the deployment's promises, with real processes on loopback:

- every PromQL expression in the alert rules and the Grafana dashboard is
  evaluated by a real Prometheus that scrapes a real slackswap-server under
  load: each returns without error, and the plan-quality panels return data;
- replica failover: three servers behind a client with the service config of
  deploy/README.md (round_robin, and the retry policy of docs/service.md); under
  load one is killed (SIGKILL) and another drained (SIGTERM): no call fails, and
  the survivors carry the load.

Usage: live_test.py --server BIN --cli BIN --proto-dir DIR --repo ROOT
"""
import argparse
import json
import os
import signal
import sys
import threading
import time
import unittest

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
import e2e_test  # noqa: E402  (Server, Prometheus, stub generation)

REPO = None


def expressions():
    """(source, expression) for every rule and dashboard target."""
    base = os.path.join(REPO, "deploy", "k8s", "base")
    out = []
    with open(os.path.join(base, "prometheusrule.yaml")) as f:
        rules = yaml.safe_load(f)
    for group in rules["spec"]["groups"]:
        for rule in group["rules"]:
            out.append((f"rule {rule['alert']}", rule["expr"]))
    with open(os.path.join(base, "grafana-dashboard.json")) as f:
        dashboard = json.load(f)
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            # The dashboard's variables, as "All" selects them.
            expr = target["expr"].replace("$namespace", ".*").replace("$job", ".*")
            out.append((f"panel {panel['title']}", expr))
    return out


class PromqlTest(unittest.TestCase):
    def test_every_rule_and_panel_expression_evaluates(self):
        from slackswap.v1 import plan_pb2, service_pb2, service_pb2_grpc
        server = e2e_test.Server()
        stop = threading.Event()
        try:
            channel = server.channel()
            stub = service_pb2_grpc.PlannerServiceStub(channel)
            g = e2e_test.generated_trace(stub)

            def load():
                # Plans (feasible and not), a bad request, and a Compare, until stopped.
                i = 0
                while not stop.is_set():
                    fraction = (0.3, 0.5, 0.7, 0.01)[i % 4]
                    stub.Plan(service_pb2.PlanRequest(
                        trace=g.trace, hardware=g.hardware,
                        budget=plan_pb2.Budget(fraction_of_peak=fraction)), timeout=30)
                    if i % 10 == 0:
                        try:
                            stub.Plan(service_pb2.PlanRequest(trace=g.trace), timeout=30)
                        except Exception:  # INVALID_ARGUMENT, on purpose
                            pass
                    i += 1
                    time.sleep(0.02)

            worker = threading.Thread(target=load)
            worker.start()
            with e2e_test.Prometheus(server.metrics_port) as prom:
                # Wait for a few scrapes, so that rate() has samples to work on,
                # and for calls that ended between two of them: the latency
                # quantiles are NaN while no rate is above 0 (a slow build,
                # such as the sanitizers', may not have finished one yet).
                self.assertGreater(prom.wait_for(
                    'count_over_time(slackswap_build_info[1m])', 4), 3)
                for metric in ("grpc_server_handling_seconds_count",
                               "slackswap_queue_wait_seconds_count"):
                    self.assertGreater(prom.wait_for(
                        f'sum(rate({metric}{{grpc_service="slackswap.v1.PlannerService"}}[5m]))',
                        1e-9), 0, metric)
                for source, expr in expressions():
                    result = prom.query(expr)  # raises on a query error
                    # A rate over calls that have not ended between two scrapes
                    # yet is NaN (a slow build under load): poll a while.
                    checked = source.startswith("panel") and not source.startswith(
                        ("panel Error ratio", "panel Refused calls"))
                    deadline = time.time() + 60
                    while checked and time.time() < deadline and not any(
                            float(r["value"][1]) == float(r["value"][1]) for r in result):
                        time.sleep(0.5)
                        result = prom.query(expr)
                    # Errors and refusals need failing calls, which this load
                    # does not make.
                    if source.startswith("panel") and not source.startswith(
                            ("panel Error ratio", "panel Refused calls")):
                        self.assertTrue(result, f"{source}: no data for {expr}")
                        values = [float(r["value"][1]) for r in result]
                        self.assertTrue(any(v == v for v in values), f"{source}: only NaN")
            stop.set()
            worker.join()
            channel.close()
        finally:
            stop.set()
            server.stop()


class FailoverTest(unittest.TestCase):
    def test_kill_one_replica_and_drain_another_under_load(self):
        import grpc
        from slackswap.v1 import plan_pb2, service_pb2, service_pb2_grpc
        servers = [e2e_test.Server("--grace", "10s") for _ in range(3)]
        try:
            target = "ipv4:" + ",".join(f"127.0.0.1:{s.port}" for s in servers)
            # The service config deploy/README.md recommends, as written there.
            with open(os.path.join(REPO, "deploy", "README.md")) as f:
                text = f.read()
            block = text[text.index("```json\n") + 8:]
            config = json.loads(block[:block.index("```")])
            channel = grpc.insecure_channel(target, options=[
                ("grpc.service_config", json.dumps(config)), ("grpc.enable_retries", 1),
                ("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)])
            stub = service_pb2_grpc.PlannerServiceStub(channel)
            g = e2e_test.generated_trace(stub)
            request = service_pb2.PlanRequest(trace=g.trace, hardware=g.hardware,
                                              budget=plan_pb2.Budget(fraction_of_peak=0.5))
            failures, calls = [], [0]
            lock = threading.Lock()
            stop_at = time.time() + 7

            def caller():
                while time.time() < stop_at:
                    try:
                        stub.Plan(request, timeout=30)
                        with lock:
                            calls[0] += 1
                    except grpc.RpcError as e:
                        with lock:
                            failures.append(e.code())

            threads = [threading.Thread(target=caller) for _ in range(4)]
            for t in threads:
                t.start()
            time.sleep(2)
            before = [e2e_test.metric_value(s.metrics_port, "grpc_server_handled_total",
                                   {"grpc_method": "Plan", "grpc_code": "OK"}) for s in servers]
            servers[0].proc.send_signal(signal.SIGKILL)
            time.sleep(1.5)
            servers[1].proc.send_signal(signal.SIGTERM)
            for t in threads:
                t.join()
            after = e2e_test.metric_value(servers[2].metrics_port, "grpc_server_handled_total",
                                 {"grpc_method": "Plan", "grpc_code": "OK"})
            channel.close()
            self.assertEqual(failures, [], f"{len(failures)} failed calls of {calls[0]}")
            self.assertGreater(calls[0], 50)
            # Round robin spread the calls over all three before the kill ...
            self.assertTrue(all(b > 0 for b in before), before)
            # ... and the last survivor carried on after the other two went.
            self.assertGreater(after, before[2])
            self.assertEqual(servers[1].proc.wait(timeout=30), 0)
        finally:
            for s in servers:
                s.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--cli", required=True)
    parser.add_argument("--proto-dir", required=True)
    parser.add_argument("--repo", required=True)

    def set_repo(args):
        global REPO
        REPO = args.repo

    e2e_test.run(parser, set_repo)


if __name__ == "__main__":
    main()
