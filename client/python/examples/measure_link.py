"""Measures host-link bandwidth on a CUDA machine: pinned-memory device-to-host
and host-to-device copies of large buffers, median of several runs, each
direction separately. Optional: the test suite never needs a GPU.

    /usr/bin/python3 client/python/examples/measure_link.py --gib 2 --runs 10
"""
import argparse
import statistics

import torch


def measure(direction, nbytes, runs):
    device = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rates = []
    for _ in range(runs + 1):  # the first run warms up
        start.record()
        if direction == "d2h":
            host.copy_(device, non_blocking=True)
        else:
            device.copy_(host, non_blocking=True)
        end.record()
        torch.cuda.synchronize()
        rates.append(nbytes / (start.elapsed_time(end) / 1e3))
    return statistics.median(rates[1:])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=float, default=2.0)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device")
    nbytes = int(args.gib * (1 << 30))
    print(f"device: {torch.cuda.get_device_name(0)}")
    for direction in ("d2h", "h2d"):
        print(f"{direction}: {measure(direction, nbytes, args.runs) / 1e9:.1f} GB/s "
              f"(median of {args.runs} copies of {args.gib} GiB, pinned host memory)")


if __name__ == "__main__":
    main()
