"""PyTorch's side of `gelu_shapes`: `aten::gelu` (the exact, erf form) and
`aten::gelu_backward` (which evaluates Phi and phi again from x) on the feed-forward's
hidden activations of `train_step`'s models, each call's median of 30 after 5 unmeasured
(its fastest with MIN set), the fastest of --rounds rounds.

    python3 crates/addnorm-kernels/examples/gelu_shapes_torch.py --threads 2 --rounds 5
"""

import torch

from torch_timing import options, timed

CASES = [
    ("d128 T128: 2048 x 512", 2048, 512),
    ("small: 544 x 256", 544, 256),
    ("demo, tiny: 544 x 128", 544, 128),
]


def main():
    args = options()
    print("| rows x d_ff | forward ms | ns/element | backward ms | ns/element | both ms |")
    print("|---|---|---|---|---|---|")
    g = torch.Generator().manual_seed(0)
    aten = torch.ops.aten
    for label, rows, n in CASES:
        x = (torch.rand(rows, n, generator=g) * 2 - 1) * 3
        dy = torch.rand(rows, n, generator=g) * 2 - 1

        def forward():
            return aten.gelu(x)

        def backward():
            return aten.gelu_backward(dy, x)

        best = [min(timed(f, 30) for _ in range(args.rounds)) for f in [forward, backward]]
        per = [t * 1e9 / (rows * n) for t in best]
        print(f"| {label} | {best[0] * 1e3:.3f} | {per[0]:.2f} | {best[1] * 1e3:.3f} | "
              f"{per[1]:.2f} | {(best[0] + best[1]) * 1e3:.3f} |")


if __name__ == "__main__":
    main()
