"""Every slackswap .proto names its generated code's package for each
language, alike across the files, and protoc accepts them: Go, Java, C#,
PHP, Ruby and Objective-C users generate from the files as they are.

Usage: proto_options_test.py PROTOC PROTO_DIR
"""
import os
import subprocess
import sys
import tempfile
import unittest

from google.protobuf import descriptor_pb2

PROTOC = PROTO_DIR = None
SAME = {
    "csharp_namespace": "Slackswap.V1",
    "go_package": "slackswap.dev/api/slackswap/v1;slackswapv1",
    "java_multiple_files": True,
    "java_package": "dev.slackswap.api.v1",
    "objc_class_prefix": "SSW",
    "php_namespace": "Slackswap\\V1",
    "ruby_package": "Slackswap::V1",
}


class ProtoOptionsTest(unittest.TestCase):
    def test_every_file_names_its_packages(self):
        folder = os.path.join(PROTO_DIR, "slackswap", "v1")
        files = sorted(f for f in os.listdir(folder) if f.endswith(".proto"))
        self.assertGreaterEqual(len(files), 6)
        with tempfile.TemporaryDirectory() as work:
            out = os.path.join(work, "set.pb")
            subprocess.run([PROTOC, f"--proto_path={PROTO_DIR}", f"--descriptor_set_out={out}",
                            *[f"slackswap/v1/{f}" for f in files]], check=True, timeout=60)
            with open(out, "rb") as f:
                descriptors = descriptor_pb2.FileDescriptorSet.FromString(f.read())
        outer_names = set()
        for file in descriptors.file:
            options = file.options
            for name, value in SAME.items():
                self.assertTrue(options.HasField(name), f"{file.name}: {name}")
                self.assertEqual(getattr(options, name), value, f"{file.name}: {name}")
            stem = os.path.basename(file.name)[:-len(".proto")]
            self.assertEqual(options.java_outer_classname, stem.capitalize() + "Proto",
                             file.name)
            outer_names.add(options.java_outer_classname)
        self.assertEqual(len(outer_names), len(files))


if __name__ == "__main__":
    PROTOC, PROTO_DIR = sys.argv.pop(1), sys.argv.pop(1)
    unittest.main(verbosity=2)
