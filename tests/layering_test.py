"""Fails when a source file includes against the direction of the layers.

The folders are the architecture (STYLE.md): base -> simulator -> planner ->
service -> server and client, each including only its own folder and those
below it. base, simulator and planner know nothing of gRPC, protobuf or
Prometheus: the wire conversions are service/'s (wire_convert.h,
trace_convert.h).

planner/ marks its public surface: planner/README.md lists its public and
internal headers, and the layers above include only the public ones. The
tests of the layers below service/ build their traces without it.

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


SURFACE_ROW = re.compile(r"^\| `([a-z_]+\.h)` \|", re.M)


def planner_surface(root):
    """(public, internal) header names from planner/README.md's two tables."""
    with open(os.path.join(root, "planner", "README.md"), encoding="utf-8") as f:
        text = f.read()
    public, internal = text.split("## Internal headers")
    return set(SURFACE_ROW.findall(public)), set(SURFACE_ROW.findall(internal))


def surface_violations(root):
    """What breaks the planner's public surface: a header on neither list or
    both, a listed header that does not exist, and an include of an internal
    header from outside planner/ (tests apart)."""
    public, internal = planner_surface(root)
    headers = {n for n in os.listdir(os.path.join(root, "planner")) if n.endswith(".h")}
    found = [f"planner/{h}: on neither list of planner/README.md"
             for h in sorted(headers - public - internal)]
    found += [f"planner/{h}: on both lists" for h in sorted(public & internal)]
    found += [f"planner/{h}: listed but not there" for h in sorted((public | internal) - headers)]
    for folder in ("service", "server", "client"):
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            for name in sorted(names):
                if not name.endswith((".h", ".cc")):
                    continue
                full = os.path.join(dirpath, name)
                with open(full, encoding="utf-8") as f:
                    for include in INCLUDE.findall(f.read()):
                        if include.startswith("planner/") and include[8:] in internal:
                            found.append(f"{os.path.relpath(full, root)}: includes the "
                                         f"internal {include}")
    return found


def tests_below_the_service(root):
    """(file, include) for each test of a layer below service/ (tests/base,
    tests/simulator, tests/planner) that includes service/: they build
    traces with the simulator's TraceSpec, as their layers do."""
    found = []
    for folder in ("base", "simulator", "planner"):
        for dirpath, _, names in os.walk(os.path.join(root, "tests", folder)):
            for name in sorted(names):
                if not name.endswith((".h", ".cc")):
                    continue
                full = os.path.join(dirpath, name)
                with open(full, encoding="utf-8") as f:
                    found += [(os.path.relpath(full, root), i)
                              for i in INCLUDE.findall(f.read()) if i.startswith("service/")]
    return found


class LayeringTest(unittest.TestCase):
    def test_the_planners_public_surface_is_all_the_layers_above_use(self):
        found = surface_violations(ROOT)
        self.assertEqual(found, [], "\n".join(found))

    def test_the_tests_below_the_service_build_traces_without_it(self):
        self.assertEqual(tests_below_the_service(ROOT), [])

    def test_it_finds_uses_of_the_planners_internals(self):
        with tempfile.TemporaryDirectory() as tmp:
            files = {
                "planner/README.md": "## Public headers\n| `a.h` | x |\n| `b.h` | y |\n"
                                     "## Internal headers\n| `b.h` | y |\n| `c.h` | z |\n"
                                     "| `gone.h` | w |\n",
                "planner/a.h": "", "planner/b.h": "", "planner/c.h": "", "planner/d.h": "",
                "service/s.cc": '#include "planner/a.h"\n#include "planner/c.h"\n',
                "tests/planner/t.cc": '#include "planner/c.h"\n#include "service/s.h"\n',
            }
            for rel, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
                with open(os.path.join(tmp, rel), "w") as f:
                    f.write(text)
            self.assertEqual(surface_violations(tmp), [
                "planner/d.h: on neither list of planner/README.md",
                "planner/b.h: on both lists",
                "planner/gone.h: listed but not there",
                "service/s.cc: includes the internal planner/c.h",
            ])
            self.assertEqual(tests_below_the_service(tmp),
                             [("tests/planner/t.cc", "service/s.h")])

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
