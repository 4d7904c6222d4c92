"""The generated protobuf and gRPC modules for slackswap.v1.

An installed package carries them (generated when it was built: setup.py, in
slackswap_client/_generated). Run from the repository instead, they are
generated on first use from its proto/ folder (or $SLACKSWAP_PROTO_DIR) into a
cache folder keyed by the protos' contents ($XDG_CACHE_HOME or ~/.cache). Both use the system protoc and
gRPC's Python plugin (Debian's protobuf-compiler-grpc). The grpc.health.v1
protos are copied under another folder name first: a generated folder named
grpc/ would shadow the grpc package.
"""
import hashlib
import importlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile

GENERATED = "_generated"
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


def generate_into(root, out):
    """Generates the modules of the protos under `root` into the folder `out`
    (created; a "done" file marks it complete)."""
    work = tempfile.mkdtemp()
    try:
        src = os.path.join(work, "slackswap_health")
        os.makedirs(src)
        shutil.copy(_HEALTH_PROTO, src)
        os.makedirs(out, exist_ok=True)
        subprocess.run(["protoc", f"-I{root}", f"-I{work}", f"--python_out={out}",
                        f"--grpc_python_out={out}",
                        "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin",
                        *_PROTOS, "slackswap_health/health.proto"],
                       check=True, capture_output=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    open(os.path.join(out, "done"), "w").close()


def _cache_root():
    """$XDG_CACHE_HOME, else ~/.cache; where neither can be written, a folder
    of this user's under the temporary folder, refused unless it is a folder
    only this user owns and can write (modules are imported from it)."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    try:
        os.makedirs(root, exist_ok=True)
        if os.access(root, os.W_OK):
            return root
    except OSError:
        pass
    root = os.path.join(tempfile.gettempdir(), f"slackswap-{os.getuid()}")
    os.makedirs(root, mode=0o700, exist_ok=True)
    info = os.lstat(root)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise RuntimeError(f"{root} is not a folder only this user owns and writes: set "
                           "XDG_CACHE_HOME, or install the package (its modules are built in)")
    return root


def _generate():
    root = proto_dir()
    digest = hashlib.sha256()
    for proto in _PROTOS:
        with open(os.path.join(root, proto), "rb") as f:
            digest.update(f.read())
    out = os.path.join(_cache_root(), "slackswap-pystubs", digest.hexdigest()[:16])
    if not os.path.exists(os.path.join(out, "done")):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        work = tempfile.mkdtemp(dir=os.path.dirname(out))
        generate_into(root, work)
        try:
            os.rename(work, out)
        except OSError:  # another process won the race
            shutil.rmtree(work, ignore_errors=True)
    return out


def packaged():
    """The folder an installed package carries, or None."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), GENERATED)
    return path if os.path.exists(os.path.join(path, "done")) else None


def load():
    """Makes `slackswap.v1.*_pb2`, `google.rpc.*_pb2` and `slackswap_health` importable."""
    global _loaded
    if not _loaded:
        path = packaged() or _generate()
        if path not in sys.path:
            sys.path.insert(0, path)
        importlib.invalidate_caches()
        _loaded = True
