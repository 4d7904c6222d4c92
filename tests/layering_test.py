"""Fails when a source file includes against the direction of the layers.

The folders are the architecture (STYLE.md): base -> simulator -> planner ->
service -> server and client, each including only its own folder and those
below it. base, simulator and planner know nothing of gRPC, protobuf or
Prometheus: the wire conversions are service/'s (wire_convert.h,
trace_convert.h).

Usage: layering_test.py ROOT      (also checks itself on a made-up tree)
"""
import os
import re
import sys
import tempfile
import unittest

LAYERS = ["base", "simulator", "planner", "service"]
ALLOWED = {
    "base": {"base"},
    "simulator": {"base", "simulator"},
    "planner": {"base", "simulator", "planner"},
    "service": {"base", "simulator", "planner", "service"},
    "server": {"base", "simulator", "planner", "service", "server"},
    "client": {"base", "simulator", "planner", "service", "client"},
}
GRPC = ("grpcpp/", "grpc/", "prometheus/")
PROTOBUF = ("google/protobuf/", "slackswap/v1/", "google/rpc/")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def violations(root):
    """(file, include, why) for every include against the layers under root."""
    found = []
    for folder, allowed in ALLOWED.items():
        path = os.path.join(root, folder)
        if not os.path.isdir(path):
            continue
        for dirpath, _, names in os.walk(path):
            for name in sorted(names):
                if not name.endswith((".h", ".cc")):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root)
                with open(full, encoding="utf-8") as f:
                    text = f.read()
                for include in INCLUDE.findall(text):
                    top = include.split("/", 1)[0]
                    if top in ALLOWED and top not in allowed:
                        found.append((rel, include, f"{folder}/ must not include {top}/"))
                    elif folder in ("base", "simulator", "planner") and \
                            include.startswith(GRPC):
                        found.append((rel, include, f"{folder}/ knows nothing of gRPC or "
                                                    "Prometheus"))
                    elif folder in ("base", "simulator", "planner") and \
                            include.startswith(PROTOBUF):
                        found.append((rel, include, f"{folder}/ knows nothing of protobuf"))
    return found


LINKS = re.compile(r"target_link_libraries\(([^)]*)\)", re.S)
WIRE_LIBRARIES = ("slackswap_proto", "slackswap_grpc_proto", "protobuf::", "gRPC::",
                  "prometheus-cpp::")


def linked_wire_libraries(root):
    """(folder, library) for each wire library that a lower layer links."""
    found = []
    for folder in ("base", "simulator", "planner"):
        with open(os.path.join(root, folder, "CMakeLists.txt"), encoding="utf-8") as f:
            for args in LINKS.findall(f.read()):
                found += [(folder, a) for a in args.split() if a.startswith(WIRE_LIBRARIES)]
    return found


class LayeringTest(unittest.TestCase):
    def test_the_lower_layers_link_no_wire_library(self):
        self.assertEqual(linked_wire_libraries(ROOT), [])

    def test_the_source_tree_includes_downwards_only(self):
        found = violations(ROOT)
        self.assertEqual(found, [], "\n".join(f"{f}: #include \"{i}\": {why}"
                                              for f, i, why in found))

    def test_it_finds_includes_against_the_direction(self):
        files = {
            "client/a.cc": '#include "server/metrics.h"\n#include "service/x.h"\n',
            "planner/b.h": '#include "service/service_core.h"\n',
            "simulator/c.cc": '#include "grpcpp/grpcpp.h"\n#include "base/file.h"\n',
            "base/d.cc": '#include "slackswap/v1/trace.pb.h"\n',
            "planner/g.h": '#include "google/protobuf/message.h"\n',
            "simulator/e.h": '#  include "planner/policies.h"\n',
            "server/f.cc": '#include "client/backend.h"\n#include "service/y.h"\n',
        }
        with tempfile.TemporaryDirectory() as tmp:
            for rel, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
                with open(os.path.join(tmp, rel), "w") as f:
                    f.write(text)
            found = {(f, i) for f, i, _ in violations(tmp)}
        self.assertEqual(found, {
            ("client/a.cc", "server/metrics.h"),
            ("planner/b.h", "service/service_core.h"),
            ("simulator/c.cc", "grpcpp/grpcpp.h"),
            ("base/d.cc", "slackswap/v1/trace.pb.h"),
            ("planner/g.h", "google/protobuf/message.h"),
            ("simulator/e.h", "planner/policies.h"),
            ("server/f.cc", "client/backend.h"),
        })


if __name__ == "__main__":
    ROOT = sys.argv.pop(1)
    unittest.main(verbosity=2)
