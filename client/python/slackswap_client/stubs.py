"""The generated protobuf and gRPC modules for slackswap.v1.

They are generated on first use from the repository's proto/ folder (or
$SLACKSWAP_PROTO_DIR) with the system protoc and gRPC's Python plugin (Debian's
protobuf-compiler-grpc), into a cache folder keyed by the protos' contents, and
imported from there. The grpc.health.v1 protos are copied under another folder
name first: a generated folder named grpc/ would shadow the grpc package.
"""
import hashlib
import importlib
import os
import shutil
import subprocess
import sys
import tempfile

_PROTOS = [
    "slackswap/v1/trace.proto", "slackswap/v1/hardware.proto", "slackswap/v1/plan.proto",
    "slackswap/v1/simulation.proto", "slackswap/v1/planning.proto", "slackswap/v1/service.proto",
    "google/rpc/status.proto", "google/rpc/error_details.proto",
]
_HEALTH_PROTO = "/usr/share/grpc-proto/grpc/health/v1/health.proto"
_loaded = False


def proto_dir():
    env = os.environ.get("SLACKSWAP_PROTO_DIR")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "..", "proto"))


def _generate():
    root = proto_dir()
    digest = hashlib.sha256()
    for proto in _PROTOS:
        with open(os.path.join(root, proto), "rb") as f:
            digest.update(f.read())
    cache_root = os.environ.get("XDG_CACHE_HOME") or os.path.join(tempfile.gettempdir(),
                                                                   f"slackswap-{os.getuid()}")
    out = os.path.join(cache_root, "slackswap-pystubs", digest.hexdigest()[:16])
    if not os.path.exists(os.path.join(out, "done")):
        work = tempfile.mkdtemp(dir=os.path.dirname(out) if os.path.isdir(os.path.dirname(out))
                                else None)
        src = os.path.join(work, "src", "slackswap_health")
        os.makedirs(src)
        shutil.copy(_HEALTH_PROTO, src)
        subprocess.run(["protoc", f"-I{root}", f"-I{os.path.join(work, 'src')}",
                        f"--python_out={work}", f"--grpc_python_out={work}",
                        "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin",
                        *_PROTOS, "slackswap_health/health.proto"],
                       check=True, capture_output=True)
        shutil.rmtree(os.path.join(work, "src"))
        open(os.path.join(work, "done"), "w").close()
        os.makedirs(os.path.dirname(out), exist_ok=True)
        try:
            os.rename(work, out)
        except OSError:  # another process won the race
            shutil.rmtree(work, ignore_errors=True)
    return out


def load():
    """Makes `slackswap.v1.*_pb2`, `google.rpc.*_pb2` and `slackswap_health` importable."""
    global _loaded
    if not _loaded:
        path = _generate()
        if path not in sys.path:
            sys.path.insert(0, path)
        importlib.invalidate_caches()
        _loaded = True
