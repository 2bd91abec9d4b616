#!/usr/bin/env python3
"""PyTorch's side of examples/gemm_shapes.rs: the same GEMM shapes through torch.mm on the
CPU, each timed alone, median of 50 calls after 10, and GFLOP/s (2·m·k·n per call).

The shapes are read from the Rust example's CASES, so the two never drift apart. An operand
the step reads transposed (A = Xᵀ, B = Wᵀ) is stored transposed and passed as a view, as the
step's autograd passes it.

    python3 crates/addnorm-kernels/examples/gemm_shapes_torch.py --threads 1
    python3 crates/addnorm-kernels/examples/gemm_shapes_torch.py --only d128
"""

import argparse
import pathlib
import re
import statistics
import time

import torch

CASE = re.compile(
    r'\(\s*"([^"]+)",\s*(\d+),\s*(\d+),\s*(\d+),\s*(true|false),\s*(true|false),?\s*\)'
)


def cases():
    source = pathlib.Path(__file__).with_name("gemm_shapes.rs").read_text()
    block = source[source.index("const CASES") :]
    block = block[: block.index("];")]
    for label, m, k, n, a_t, b_t in CASE.findall(block):
        yield label, int(m), int(k), int(n), a_t == "true", b_t == "true"


def time_case(m, k, n, a_t, b_t):
    a = torch.randn(k, m).t() if a_t else torch.randn(m, k)
    b = torch.randn(n, k).t() if b_t else torch.randn(k, n)
    out = torch.empty(m, n)
    times = []
    for i in range(60):
        start = time.perf_counter()
        torch.mm(a, b, out=out)
        if i >= 10:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), median of 50 calls")
    print(f"{'shape':<40} {'torch.mm':>11} {'GFLOP/s':>9}")
    for label, m, k, n, a_t, b_t in cases():
        if args.only in label:
            seconds = time_case(m, k, n, a_t, b_t)
            print(f"{label:<40} {seconds * 1e6:>8.2f} µs {2 * m * k * n / seconds / 1e9:>9.1f}")


if __name__ == "__main__":
    main()
