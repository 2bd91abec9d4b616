"""PyTorch's side of `norm_shapes`: `native_layer_norm` (the forward, with its saved mean
and rstd) and `native_layer_norm_backward` (dx, dgamma, dbeta) on the LayerNorm inputs of
`train_step`'s models, each call's median of 30 after 5 unmeasured (its fastest with MIN
set), the fastest of --rounds rounds.

    python3 crates/addnorm-kernels/examples/norm_shapes_torch.py --threads 2 --rounds 5
"""

import torch

from torch_timing import options, timed

CASES = [
    ("d128 T128: 2048 x 128", 2048, 128),
    ("small: 544 x 64", 544, 64),
    ("demo, tiny: 544 x 32", 544, 32),
]


def main():
    args = options()
    print("| rows x n | forward ms | GB/s | backward ms | GB/s |")
    print("|---|---|---|---|---|")
    g = torch.Generator().manual_seed(0)
    aten = torch.ops.aten
    for label, rows, n in CASES:
        x, dy = (torch.rand(rows, n, generator=g) * 2 - 1 for _ in range(2))
        gamma = 1 + (torch.rand(n, generator=g) * 2 - 1) / 4
        beta = torch.rand(n, generator=g) * 2 - 1
        _, mean, rstd = aten.native_layer_norm(x, [n], gamma, beta, 1e-5)

        def forward():
            return aten.native_layer_norm(x, [n], gamma, beta, 1e-5)

        def backward():
            return aten.native_layer_norm_backward(
                dy, x, [n], mean, rstd, gamma, beta, [True, True, True])

        best = [min(timed(f, 30) for _ in range(args.rounds)) for f in [forward, backward]]
        cells = " | ".join(f"{t * 1e3:.3f} | {rows * n * b / t / 1e9:.1f}"
                           for t, b in zip(best, [8, 12]))
        print(f"| {label} | {cells} |")


if __name__ == "__main__":
    main()
