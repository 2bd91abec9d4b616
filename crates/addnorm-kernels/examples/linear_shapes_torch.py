"""PyTorch's side of `linear_shapes`: `addmm` (the forward with its bias), `dy @ w.T` (dX)
and `x.T @ dy` with `dy.sum(0)` (dW, db) on the d128/T128 model's layers, each call's median
of 30 after 5 unmeasured (its fastest with MIN set), the fastest of --rounds rounds.

    python3 crates/addnorm-kernels/examples/linear_shapes_torch.py --threads 2 --rounds 5

With COLD=N in the environment the calls cycle through N copies of their operands, as
`linear_shapes` does.
"""

import itertools
import os

import torch

from torch_timing import options, timed

CASES = [
    ("projection 2048 x 128 -> 128", 2048, 128, 128),
    ("feed-forward in 2048 x 128 -> 512", 2048, 128, 512),
    ("feed-forward out 2048 x 512 -> 128", 2048, 512, 128),
]


def main():
    args = options()
    print("| layer | forward ms | GFLOP/s | dX ms | GFLOP/s | dW, db ms | GFLOP/s |")
    print("|---|---|---|---|---|---|---|")
    g = torch.Generator().manual_seed(0)
    for label, rows, d_in, d_out in CASES:
        copies = [[torch.rand(*s, generator=g) * 2 - 1
                   for s in [(rows, d_in), (d_in, d_out), (d_out,), (rows, d_out)]]
                  for _ in range(int(os.environ.get("COLD", "1")))]
        cycle = itertools.cycle(copies)

        def forward():
            x, w, b, _ = next(cycle)
            return torch.addmm(b, x, w)

        def input_gradient():
            _, w, _, dy = next(cycle)
            return dy @ w.T

        def parameter_gradients():
            x, _, _, dy = next(cycle)
            return x.T @ dy, dy.sum(0)

        calls = [forward, input_gradient, parameter_gradients]
        best = [min(timed(f, 30) for _ in range(args.rounds)) for f in calls]
        flops = 2.0 * rows * d_in * d_out
        cells = " | ".join(f"{t * 1e3:.3f} | {flops / t / 1e9:.1f}" for t in best)
        print(f"| {label} | {cells} |")


if __name__ == "__main__":
    main()
