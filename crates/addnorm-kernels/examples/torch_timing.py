"""What the PyTorch sides of the kernel examples share (`attention_shapes_torch.py`,
`gelu_shapes_torch.py`, `linear_shapes_torch.py`, `norm_shapes_torch.py`): their options (--threads, --rounds) and
header line, and a call's median time over a number of calls after 5 unmeasured ones, or
its fastest with MIN set in the environment (a noisy host only adds time)."""

import argparse
import os
import statistics
import time

import torch

MIN = "MIN" in os.environ


def timed(f, calls):
    """Seconds per call of f: the median (the fastest with MIN) of `calls` after 5 more."""
    for _ in range(5):
        f()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times) if MIN else statistics.median(times)


def options():
    """--threads (torch's, default 2) and --rounds (default 1), applied and announced."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    stat = "fastest run" if MIN else "median"
    print(f"threads {args.threads}; each cell is the best of {args.rounds} rounds of a call's {stat}")
    return args
