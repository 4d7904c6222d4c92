"""Static checks of the deployment: the kustomize base and example overlay
render with kubectl, the sources and the rendered manifests pass yamllint,
the alert rules pass promtool, and the rendered objects say what
deploy/README.md promises. Usage: manifests_test.py REPO_ROOT
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import yaml

ROOT = None


def render(path):
    out = subprocess.run(["kubectl", "kustomize", os.path.join(ROOT, path)],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise AssertionError(f"kubectl kustomize {path} failed: {out.stderr}")
    return out.stdout


def objects(rendered):
    return {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(rendered) if o}


def kustomize_major():
    out = subprocess.run(["kubectl", "version", "--client"], capture_output=True, text=True,
                         timeout=60).stdout
    found = re.search(r"Kustomize Version: v(\d+)", out)
    return int(found.group(1)) if found else 0


class ManifestsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # The manifests use kustomize v5 syntax (labels, patches): kubectl
        # 1.27 or later. Debian 12's kubernetes-client (1.20) embeds v2.
        if kustomize_major() < 5:
            raise unittest.SkipTest("needs kubectl with kustomize v5 (1.27 or later)")
        cls.base = render("deploy/k8s/base")
        cls.overlay = render("deploy/k8s/overlays/example")
        cls.tls = objects(render("deploy/k8s/overlays/tls"))
        cls.objects = objects(cls.overlay)

    def test_everything_renders(self):
        kinds = sorted(kind for kind, _ in self.objects)
        self.assertEqual(kinds, sorted(["ConfigMap", "Deployment", "HorizontalPodAutoscaler",
                                        "Namespace", "PodDisruptionBudget", "PrometheusRule",
                                        "Service", "Service", "ServiceMonitor"]))
        for (kind, name), obj in self.objects.items():
            if kind == "Namespace":
                self.assertEqual(name, "planning")
            else:
                self.assertEqual(obj["metadata"]["namespace"], "planning")

    def test_yamllint(self):
        lint = ["yamllint", "-s", "-c", os.path.join(ROOT, ".yamllint")]
        sources = subprocess.run(lint + [os.path.join(ROOT, "deploy")], capture_output=True,
                                 text=True)
        self.assertEqual(sources.returncode, 0, sources.stdout)
        # Rendered manifests embed the dashboard JSON: long lines are fine there.
        relaxed = ("{extends: default, rules: {line-length: disable, document-start: disable, "
                   "indentation: {spaces: 2, indent-sequences: whatever}, "
                   "truthy: {check-keys: false}}}")
        for rendered in (self.base, self.overlay):
            with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
                f.write(rendered)
                f.flush()
                out = subprocess.run(["yamllint", "-s", "-d", relaxed, f.name],
                                     capture_output=True, text=True)
                self.assertEqual(out.returncode, 0, out.stdout)

    def test_promtool_checks_the_alert_rules(self):
        rule = self.objects[("PrometheusRule", "slackswap")]
        self.assertEqual(rule["metadata"]["labels"]["release"], "monitoring")
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            yaml.safe_dump(rule["spec"], f)
            f.flush()
            out = subprocess.run(["promtool", "check", "rules", f.name], capture_output=True,
                                 text=True)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            self.assertIn("9 rules found", out.stdout)

    def test_every_alert_is_scoped_labelled_and_has_a_runbook(self):
        rules = [r for g in self.objects[("PrometheusRule", "slackswap")]["spec"]["groups"]
                 for r in g["rules"]]
        with open(os.path.join(ROOT, "deploy", "README.md")) as f:
            readme = f.read().lower()
        for rule in rules:
            expr = rule["expr"]
            self.assertIn(rule["labels"]["severity"], ("critical", "warning"), rule["alert"])
            # Only SlackSwap's series: its gRPC service, its own families, its job.
            if "grpc_server_" in expr:
                self.assertEqual(expr.count("grpc_server_"),
                                 expr.count('grpc_service="slackswap.v1.PlannerService"'),
                                 rule["alert"])
            if "up{" in expr:
                self.assertIn('up{job="slackswap"', expr, rule["alert"])
            self.assertIn("namespace, job", expr, rule["alert"])
            runbook = rule["annotations"]["runbook_url"]
            self.assertEqual(runbook, "deploy/README.md#" + rule["alert"].lower())
            self.assertIn("### " + rule["alert"].lower(), readme)

    def test_promtool_unit_tests_fire_on_ours_and_not_on_foreign_series(self):
        """tests/deploy/alerts_test.yaml, with each expected alert's annotations
        taken from its rule ({{ $labels.x }} expanded)."""
        rules = {r["alert"]: r
                 for g in self.objects[("PrometheusRule", "slackswap")]["spec"]["groups"]
                 for r in g["rules"]}
        with open(os.path.join(ROOT, "tests", "deploy", "alerts_test.yaml")) as f:
            cases = yaml.safe_load(f)
        tested = set()
        for case in cases["tests"]:
            for check in case["alert_rule_test"]:
                tested.add(check["alertname"])
                for alert in check["exp_alerts"]:
                    labels = alert["exp_labels"]
                    alert["exp_annotations"] = {
                        k: re.sub(r"\{\{ \$labels\.(\w+) \}\}",
                                  lambda m, labels=labels: str(labels[m.group(1)]), v)
                        for k, v in rules[check["alertname"]]["annotations"].items()}
                    for text in alert["exp_annotations"].values():
                        self.assertNotIn("{{", text, check["alertname"])
        self.assertEqual(tested, set(rules), "every alert has a case")
        with tempfile.TemporaryDirectory() as work:
            with open(os.path.join(work, "rules.yaml"), "w") as f:
                yaml.safe_dump(self.objects[("PrometheusRule", "slackswap")]["spec"], f)
            with open(os.path.join(work, "alerts_test.yaml"), "w") as f:
                yaml.safe_dump(cases, f)
            out = subprocess.run(["promtool", "test", "rules", "alerts_test.yaml"],
                                 capture_output=True, text=True, cwd=work, timeout=120)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            self.assertIn("SUCCESS", out.stdout + out.stderr)

    def test_deployment(self):
        d = self.objects[("Deployment", "slackswap")]
        spec = d["spec"]
        # The HPA owns the replica count.
        self.assertNotIn("replicas", spec)
        pod = spec["template"]["spec"]
        (c,) = pod["containers"]
        self.assertEqual(c["image"], "registry.example.com/slackswap-server:0.1.0")
        self.assertTrue(pod["securityContext"]["runAsNonRoot"])
        self.assertGreater(pod["securityContext"]["runAsUser"], 0)
        sc = c["securityContext"]
        self.assertTrue(sc["readOnlyRootFilesystem"])
        self.assertFalse(sc["allowPrivilegeEscalation"])
        self.assertEqual(sc["capabilities"]["drop"], ["ALL"])
        for kind in ("requests", "limits"):
            self.assertIn("cpu", c["resources"][kind])
            self.assertIn("memory", c["resources"][kind])
        # HTTP probes on the metrics port: they work with TLS on the gRPC port.
        self.assertEqual(c["livenessProbe"]["httpGet"], {"path": "/healthz", "port": "metrics"})
        self.assertEqual(c["readinessProbe"]["httpGet"], {"path": "/readyz", "port": "metrics"})
        self.assertTrue(any(a.startswith("--metrics=") and a != "--metrics=" for a in c["args"]))
        keys = {t["topologyKey"] for t in pod["topologySpreadConstraints"]}
        self.assertEqual(keys, {"topology.kubernetes.io/zone", "kubernetes.io/hostname"})
        # Termination grace > pre-stop delay + the server's drain.
        prestop = int(c["lifecycle"]["preStop"]["exec"]["command"][1])
        grace = next(int(a.split("=")[1].rstrip("s")) for a in c["args"] if a.startswith("--grace="))
        self.assertGreater(pod["terminationGracePeriodSeconds"], prestop + grace)
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        self.assertEqual(ports, {"grpc": 50051, "metrics": 9464})

    def test_memory_limit_holds_the_servers_per_call_bounds(self):
        """docs/service.md, Limits: requests waiting in the queue, then per
        planning thread (one per CPU) a call's planning memory and its request
        flattened, then the process itself, fit the container's limit."""
        (c,) = self.objects[("Deployment", "slackswap")]["spec"]["template"]["spec"]["containers"]
        flags = dict(a[2:].split("=", 1) for a in c["args"] if "=" in a)
        self.assertNotIn("planning_threads", flags, "threads follow the CPU limit")
        units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
        limit = c["resources"]["limits"]["memory"]
        limit_bytes = int(limit[:-2]) * units[limit[-2:]]
        threads = int(c["resources"]["limits"]["cpu"])
        message = int(flags["max_message_bytes"])
        needed = (int(flags["max_concurrent_requests"]) * message +
                  threads * (int(flags["max_call_memory_bytes"]) + 2 * message) + (64 << 20))
        self.assertLessEqual(needed, limit_bytes, f"{needed >> 20} MiB > {limit}")

    def test_services_autoscaling_and_budget(self):
        grpc = self.objects[("Service", "slackswap")]
        self.assertEqual(grpc["spec"]["clusterIP"], "None")
        metrics = self.objects[("Service", "slackswap-metrics")]
        monitor = self.objects[("ServiceMonitor", "slackswap")]
        selector = monitor["spec"]["selector"]["matchLabels"]
        for key, value in selector.items():
            self.assertEqual(metrics["metadata"]["labels"].get(key), value)
        self.assertEqual(monitor["spec"]["endpoints"][0]["port"], "metrics")
        hpa = self.objects[("HorizontalPodAutoscaler", "slackswap")]
        self.assertEqual(hpa["apiVersion"], "autoscaling/v2")
        self.assertEqual(hpa["spec"]["metrics"][0]["resource"]["name"], "cpu")
        pdb = self.objects[("PodDisruptionBudget", "slackswap")]
        self.assertEqual(pdb["apiVersion"], "policy/v1")
        self.assertEqual(pdb["spec"], {**pdb["spec"], "maxUnavailable": 1})
        self.assertNotIn("minAvailable", pdb["spec"])
        pod_labels = self.objects[("Deployment", "slackswap")]["spec"]["template"]["metadata"]
        for key, value in pdb["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(pod_labels["labels"][key], value)

    def test_tls_overlay(self):
        d = self.tls[("Deployment", "slackswap")]
        pod = d["spec"]["template"]["spec"]
        (c,) = pod["containers"]
        flags = dict(a[2:].split("=", 1) for a in c["args"] if "=" in a)
        mount = c["volumeMounts"][0]["mountPath"]
        self.assertEqual(flags["tls_cert"], mount + "/tls.crt")
        self.assertEqual(flags["tls_key"], mount + "/tls.key")
        self.assertIn("tls_reload_interval", flags)
        (volume,) = pod["volumes"]
        self.assertEqual(volume["secret"]["secretName"], "slackswap-tls")
        self.assertTrue(c["volumeMounts"][0]["readOnly"])
        # Everything else is the example overlay's.
        self.assertIn("httpGet", c["readinessProbe"])
        self.assertEqual(d["metadata"]["namespace"], "planning")

    def test_dashboard_configmap(self):
        cm = self.objects[("ConfigMap", "slackswap-grafana-dashboard")]
        self.assertEqual(cm["metadata"]["labels"]["grafana_dashboard"], "1")
        dashboard = json.loads(cm["data"]["grafana-dashboard.json"])
        titles = [p["title"] for p in dashboard["panels"]]
        for wanted in ("RPC rate by method and code", "Latency and queue wait by method",
                       "In flight against the limit",
                       "Refused calls (RESOURCE_EXHAUSTED) per second",
                       "Replicas up and planning threads", "Request size (p50, p99) by method",
                       "Predicted throughput (fraction of ideal)", "Plans by outcome and policy",
                       "Planning time", "Gap to the lower bound"):
            self.assertIn(wanted, titles)
        # Every query is SlackSwap's, in the namespaces and jobs the variables
        # select.
        variables = {v["name"] for v in dashboard["templating"]["list"]}
        self.assertTrue({"datasource", "namespace", "job"} <= variables, variables)
        for panel in dashboard["panels"]:
            for target in panel.get("targets", []):
                expr = target["expr"]
                self.assertIn('namespace=~"$namespace"', expr, panel["title"])
                self.assertIn('job=~"$job"', expr, panel["title"])
                self.assertGreaterEqual(
                    expr.count('grpc_service="slackswap.v1.PlannerService"'),
                    expr.count("grpc_server_"), panel["title"])


if __name__ == "__main__":
    ROOT = sys.argv.pop(1)
    program = unittest.main(exit=False, verbosity=2)
    failed = len(program.result.failures) + len(program.result.errors)
    print(f"{program.result.testsRun - failed} passed, {failed} failed")
    sys.exit(0 if program.result.wasSuccessful() else 1)
