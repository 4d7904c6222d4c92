"""End-to-end tests of the real slackswap-server over TLS, on loopback only:
the CLI plans over TLS and not in plaintext, mutual TLS requires a client
certificate, broken certificate files stop the start naming the flag, and
renewed certificates are served without a restart while plain HTTP probes
work on the metrics port (also while draining).

Run by ctest: tls_e2e_test.py --server BIN --cli BIN --proto-dir DIR
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402  (the harness: ARGS once parsed, main)
from e2e_test import Server, generated_trace, genetic_search_compare  # noqa: E402


class TlsTest(unittest.TestCase):
    """TLS and mutual TLS with a throwaway CA made by openssl at test time."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        d = cls.dir

        def run(*args):
            subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

        run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test-ca",
            "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem")
        with open(f"{d}/san.ext", "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        for name in ("server", "client"):
            run("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
                "-keyout", f"{d}/{name}.key", "-out", f"{d}/{name}.csr")
            run("x509", "-req", "-in", f"{d}/{name}.csr", "-CA", f"{d}/ca.pem", "-CAkey",
                f"{d}/ca.key", "-CAcreateserial", "-days", "2", "-extfile", f"{d}/san.ext",
                "-out", f"{d}/{name}.pem")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def cli_plan(self, server, *flags):
        return subprocess.run([e2e_test.ARGS.cli, "plan", "--preset", "llama-7b", "--layers", "2",
                               "--budget", "0.8", "--deadline", "10s", "--server",
                               f"localhost:{server.port}", *flags],
                              capture_output=True, text=True, timeout=60)

    def test_tls(self):
        d = self.dir
        server = Server("--tls_cert", f"{d}/server.pem", "--tls_key", f"{d}/server.key")
        try:
            ok = self.cli_plan(server, "--tls_ca", f"{d}/ca.pem")
            self.assertEqual(ok.returncode, 0, ok.stderr)
            self.assertIn("lower bound", ok.stdout)
            plaintext = self.cli_plan(server)
            self.assertNotEqual(plaintext.returncode, 0)
        finally:
            server.stop()

    def test_broken_tls_files_stop_the_start_naming_the_flag(self):
        d = self.dir
        with open(os.path.join(d, "garbage.pem"), "w") as f:
            f.write("not a certificate\n")
        for flags, message in (
                (("--tls_cert", f"{d}/server.pem", "--tls_key", f"{d}/client.key"),
                 "tls_key: not the key of the certificate in tls_cert"),
                (("--tls_cert", f"{d}/garbage.pem", "--tls_key", f"{d}/server.key"),
                 "tls_cert: no PEM certificate"),
                (("--tls_cert", f"{d}/server.pem", "--tls_key", f"{d}/server.key",
                  "--tls_client_ca", f"{d}/garbage.pem"), "tls_client_ca: no PEM certificate")):
            out = subprocess.run([e2e_test.ARGS.server, "--listen", "127.0.0.1:0", "--metrics", "",
                                  *flags], capture_output=True, text=True, timeout=30)
            self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
            self.assertIn(message, out.stderr)

    def peer_common_name(self, port):
        import ssl
        context = ssl.create_default_context(cafile=f"{self.dir}/ca.pem")
        context.set_alpn_protocols(["h2"])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            with context.wrap_socket(sock, server_hostname="localhost") as tls:
                cert = tls.getpeercert()
        return dict(pair[0] for pair in cert["subject"])["commonName"]

    def test_renewed_certificates_are_served_and_probes_work_over_http(self):
        import grpc
        d = self.dir
        live = os.path.join(d, "live")
        os.makedirs(live, exist_ok=True)
        shutil.copy(f"{d}/server.pem", f"{live}/tls.crt")
        shutil.copy(f"{d}/server.key", f"{live}/tls.key")
        server = Server("--tls_cert", f"{live}/tls.crt", "--tls_key", f"{live}/tls.key",
                        "--tls_reload_interval", "1s", "--grace", "5s")
        try:
            self.assertEqual(self.peer_common_name(server.port), "server")
            # Plain HTTP probes on the metrics port, whatever the gRPC port speaks.
            for path in ("/healthz", "/readyz"):
                with urllib.request.urlopen(
                        f"http://127.0.0.1:{server.metrics_port}{path}", timeout=5) as r:
                    self.assertEqual(r.status, 200, path)
            # A renewed certificate (as cert-manager rotates a Secret) is served
            # to new connections without a restart.
            subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj",
                            "/CN=server-renewed", "-keyout", f"{d}/renewed.key", "-out",
                            f"{d}/renewed.csr"], check=True, capture_output=True, timeout=60)
            subprocess.run(["openssl", "x509", "-req", "-in", f"{d}/renewed.csr", "-CA",
                            f"{d}/ca.pem", "-CAkey", f"{d}/ca.key", "-CAcreateserial", "-days",
                            "2", "-extfile", f"{d}/san.ext", "-out", f"{d}/renewed.pem"],
                           check=True, capture_output=True, timeout=60)
            shutil.copy(f"{d}/renewed.key", f"{live}/tls.key.new")
            shutil.copy(f"{d}/renewed.pem", f"{live}/tls.crt.new")
            os.replace(f"{live}/tls.key.new", f"{live}/tls.key")
            os.replace(f"{live}/tls.crt.new", f"{live}/tls.crt")
            deadline = time.time() + 10
            while self.peer_common_name(server.port) != "server-renewed":
                self.assertLess(time.time(), deadline, "the renewed certificate never served")
                time.sleep(0.2)
            ok = self.cli_plan(server, "--tls_ca", f"{d}/ca.pem")
            self.assertEqual(ok.returncode, 0, ok.stderr)
            # Draining: /readyz turns 503 at once while a call still runs.
            from slackswap.v1 import service_pb2_grpc
            with open(f"{d}/ca.pem", "rb") as f:
                credentials = grpc.ssl_channel_credentials(f.read())
            channel = grpc.secure_channel(f"localhost:{server.port}", credentials)
            stub = service_pb2_grpc.PlannerServiceStub(channel)
            g = generated_trace(stub, "llama-7b", 16)
            worker = threading.Thread(target=lambda: self.assertRaises(
                grpc.RpcError, stub.Compare, genetic_search_compare(g, 100000), timeout=3))
            worker.start()
            time.sleep(0.3)
            server.proc.send_signal(signal.SIGTERM)
            code = None
            deadline = time.time() + 3
            while time.time() < deadline and server.proc.poll() is None:
                try:
                    urllib.request.urlopen(
                        f"http://127.0.0.1:{server.metrics_port}/readyz", timeout=1)
                    code = 200
                except urllib.error.HTTPError as e:
                    code = e.code
                    break
                except OSError:
                    break
                time.sleep(0.05)
            worker.join()
            channel.close()
            self.assertEqual(code, 503)
        finally:
            server.stop()

    def test_mutual_tls_requires_a_client_certificate(self):
        d = self.dir
        server = Server("--tls_cert", f"{d}/server.pem", "--tls_key", f"{d}/server.key",
                        "--tls_client_ca", f"{d}/ca.pem")
        try:
            anonymous = self.cli_plan(server, "--tls_ca", f"{d}/ca.pem")
            self.assertNotEqual(anonymous.returncode, 0)
            known = self.cli_plan(server, "--tls_ca", f"{d}/ca.pem", "--tls_cert",
                                  f"{d}/client.pem", "--tls_key", f"{d}/client.key")
            self.assertEqual(known.returncode, 0, known.stderr)
        finally:
            server.stop()


if __name__ == "__main__":
    e2e_test.main()
