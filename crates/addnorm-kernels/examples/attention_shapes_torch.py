"""PyTorch's side of `attention_shapes`: causal `scaled_dot_product_attention` on the lab's
models' shapes, its heads split from `[batch, T, d_model]` projections as the lab's PyTorch
model splits them (a view and a transpose, no copy), forward alone and forward + backward.
Each call's median of 20 (the large model) or 400, after 5 unmeasured; the fastest of
--rounds rounds. The backward column is forward + backward minus the forward.

    python3 crates/addnorm-kernels/examples/attention_shapes_torch.py --threads 2 --rounds 5
"""

import torch
import torch.nn.functional as F

from torch_timing import options, timed

QUERY_BLOCK = 64

# label, batch, T, heads, d_head: as attention_shapes.rs
CASES = [
    ("d128 T128: 16 x 128, 4 heads of 32", 16, 128, 4, 32),
    ("small: 32 x 17, 4 heads of 16", 32, 17, 4, 16),
    ("demo: 32 x 17, 2 heads of 16", 32, 17, 2, 16),
]


def product_flops(batch, seq, heads, d_head):
    """2·rows·n_k·d_head per product over the query blocks addnorm runs (as the Rust side)."""
    per_head = sum((min(i0 + QUERY_BLOCK, seq) - i0) * min(i0 + QUERY_BLOCK, seq) * d_head
                   for i0 in range(0, seq, QUERY_BLOCK))
    return 2.0 * per_head * batch * heads


def main():
    args = options()
    print("| case | forward ms | GFLOP/s | backward ms | GFLOP/s |\n|---|---|---|---|---|")
    g = torch.Generator().manual_seed(0)
    for label, batch, seq, heads, d_head in CASES:
        d = heads * d_head
        q, k, v, grad = (torch.rand(batch, seq, d, generator=g) * 2 - 1 for _ in range(4))
        split = lambda t: t.view(batch, seq, heads, d_head).transpose(1, 2)
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        g_out = split(grad)

        def forward():
            with torch.no_grad():
                F.scaled_dot_product_attention(split(q), split(k), split(v), is_causal=True)

        def both():
            for leaf in leaves:
                leaf.grad = None
            out = F.scaled_dot_product_attention(*(split(t) for t in leaves), is_causal=True)
            out.backward(g_out)

        calls = 20 if seq > 64 else 400
        fwd = min(timed(forward, calls) for _ in range(args.rounds))
        fb = min(timed(both, calls) for _ in range(args.rounds))
        bwd = fb - fwd
        flops = product_flops(batch, seq, heads, d_head)
        print(f"| {label} | {fwd * 1e3:.3f} | {2 * flops / fwd / 1e9:.1f} "
              f"| {bwd * 1e3:.3f} | {5 * flops / bwd / 1e9:.1f} |")


if __name__ == "__main__":
    main()
