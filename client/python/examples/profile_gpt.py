"""Profile a small GPT-2-style decoder on CPU and plan it with a running
slackswap-server (or only write the trace).

    /usr/bin/python3 client/python/examples/profile_gpt.py --out gpt.json
    /usr/bin/python3 client/python/examples/profile_gpt.py --server localhost:50051
"""
import argparse
import os
import sys

import torch
from google.protobuf import json_format

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slackswap_client import Client, profile  # noqa: E402
import models  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--hardware", default="a100")
    parser.add_argument("--out", help="write the trace here (.json: JSON, else binary)")
    parser.add_argument("--server", help="plan on this slackswap-server")
    parser.add_argument("--budget", type=float, default=0.5)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = models.gpt(args.layers, args.hidden, heads=4, seq=args.seq, vocab=256)
    tokens = torch.randint(0, 256, (args.batch, args.seq))
    trace = profile(model, (tokens,), models.language_model_loss(tokens), timing="modelled",
                    hardware=args.hardware, name=f"gpt {args.layers}x{args.hidden}")
    print(f"{len(trace.operators)} ops, {len(trace.tensors)} saved tensors, "
          f"{sum(t.size_bytes for t in trace.tensors) / 1e6:.1f} MB saved")
    if args.out:
        if args.out.endswith(".json"):
            with open(args.out, "w") as f:
                f.write(json_format.MessageToJson(trace, preserving_proto_field_name=True))
        else:
            with open(args.out, "wb") as f:
                f.write(trace.SerializeToString())
    if args.server:
        with Client(args.server) as client:
            response = client.plan(trace, hardware=args.hardware, budget_fraction=args.budget)
            m = response.report.metrics
            print(f"planned: {100 * m.throughput_ratio:.1f}% of ideal, swapped "
                  f"{m.swapped_bytes / 1e6:.1f} MB, recomputed {m.recomputed_bytes / 1e6:.1f} MB "
                  f"(planned in {response.planning_time_ns / 1e6:.2f} ms)")


if __name__ == "__main__":
    main()
