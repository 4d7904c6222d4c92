"""Builds slackswap_client with its protobuf and gRPC modules generated at
build time (protoc and grpc_python_plugin, Debian's protobuf-compiler-grpc)
from the repository's proto/ folder (or $SLACKSWAP_PROTO_DIR) into
slackswap_client/_generated, so an installed client never generates anything
at run time.

    python3 -m venv --system-site-packages venv
    venv/bin/pip install --no-deps --no-build-isolation client/python
"""
import importlib.util
import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        # stubs.py alone: importing the package would import torch.
        spec = importlib.util.spec_from_file_location(
            "slackswap_stubs", os.path.join(HERE, "slackswap_client", "stubs.py"))
        stubs = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(stubs)
        proto_dir = os.environ.get("SLACKSWAP_PROTO_DIR") or os.path.join(HERE, "..", "..",
                                                                          "proto")
        target = os.path.join(self.build_lib, "slackswap_client", stubs.GENERATED)
        stubs.generate_into(os.path.abspath(proto_dir), target)


setup(cmdclass={"build_py": BuildWithStubs})
