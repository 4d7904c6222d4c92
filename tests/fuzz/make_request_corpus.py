#!/usr/bin/env python3
"""Writes the request fuzzer's seed corpus (tests/fuzz/request_fuzzer.cc).

From the trace fuzzer's seeds (tests/fuzz/corpus: one control byte, then a
trace), one trace of each model family and of two offload modes (fsdp, zero:
the job's own host traffic), behind the request fuzzer's control
bytes: PlanNode and Plan seeds (the trace itself), and raw seeds (a
PlanNodeRequest of two jobs of the trace, encoded here). The control bytes
are drawn from a fixed seed with the mode bits set, so the output is the same
on every run.

Usage: make_request_corpus.py TRACE_CORPUS_DIR OUT_DIR
"""

import os
import random
import struct
import sys

CONTROL_BYTES = 10  # kControlBytes
MODES = {"node": 0, "plan": 2, "raw": 3}
FAMILIES = ("bert", "gpt2", "llama", "vgg16", "fsdp", "zero")


def varint(value):
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field_varint(number, value):
    return varint(number << 3) + varint(value)


def field_bytes(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def field_double(number, value):
    return varint(number << 3 | 1) + struct.pack("<d", value)


def node_request(trace):
    """A PlanNodeRequest (service.proto): two jobs of `trace` on PCIe 4.0
    links under a 25 GB/s uplink, with HBM contention."""
    hardware = (field_varint(2, 25_000_000_000) + field_varint(3, 25_000_000_000)
                + field_varint(7, 100_000_000_000_000)
                + field_varint(8, 1_000_000_000_000)
                + field_varint(10, 25_000_000_000)
                + field_varint(11, 25_000_000_000))
    request = field_bytes(1, hardware)
    for name, fraction, gpus, policy in ((b"a", 0.5, 2, 2), (b"b", 0.3, 1, 6)):
        job = (field_bytes(1, name) + field_bytes(2, trace)
               + field_bytes(3, field_double(2, fraction))
               + field_varint(4, gpus) + field_varint(5, policy))
        request += field_bytes(2, job)
    physics = field_varint(1, 2) + field_varint(3, 1)  # caching, contention
    return request + field_bytes(4, physics) + field_varint(5, 3)


def control(rng, mode):
    bits = bytearray(rng.randbytes(CONTROL_BYTES))
    bits[0] = (bits[0] & ~3) | MODES[mode]
    return bytes(bits)


def main():
    source, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    rng = random.Random(31)
    for family in FAMILIES:
        with open(os.path.join(source, family + "-04"), "rb") as f:
            trace = f.read()[1:]  # past the trace fuzzer's control byte
        seeds = [("node", 0), ("node", 1), ("node", 2), ("plan", 0),
                 ("plan", 1), ("plan", 2), ("raw", 0)]
        for mode, i in seeds:
            body = node_request(trace) if mode == "raw" else trace
            path = os.path.join(out, f"{family}-{mode}-{i}")
            with open(path, "wb") as f:
                f.write(control(rng, mode) + body)


if __name__ == "__main__":
    main()
