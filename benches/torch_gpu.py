#!/usr/bin/env python3
"""PyTorch on CUDA, timed the way the `--cuda` tables of benches/norm_kernels.rs and
benches/attention.rs time addnorm's CubeCL kernels: the GPU column beside them.

    python3 benches/torch_gpu.py norms       # LayerNorm, RMSNorm, loss-only, GroupNorm rows
    python3 benches/torch_gpu.py attention   # causal attention, with and without a soft cap

One step is the norm's (or attention's) forward, loss = sum(y * dy), loss.backward(), in
float32, followed by torch.cuda.synchronize(), as the Rust bench syncs its device after each
step. Each case runs 3 warm-up steps, then the median of --reps timed steps (wall clock).

Prints one line per case: label, tab, median milliseconds. The labels are the Rust tables'
own, so that they join row by row. Without CUDA it prints nothing and exits 1.
"""

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

NORM_SHAPES = [("4096×1024", (4096, 1024)), ("8192×512", (8192, 512)),
               ("65536×64", (65536, 64)), ("16384×256", (16384, 256)),
               ("64×8192", (64, 8192)), ("8×32×768", (8, 32, 768))]
GROUP_CASES = [("GroupNorm 32 groups", (32, 64, 32, 32), 32),
               ("InstanceNorm", (32, 64, 32, 32), 64),
               ("GroupNorm 8 groups", (8, 256, 16, 16), 8)]
ATTENTION_CASES = [(32, 2, 17, 16), (16, 4, 128, 32), (4, 8, 1024, 64)]


def median_ms(step, reps):
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def norm_step(norm, shape):
    x0 = (torch.randn(shape, device="cuda") * 2.0 + 0.5)
    dy = torch.randn(shape, device="cuda")

    def step():
        x = x0.detach().requires_grad_()
        (norm(x) * dy).sum().backward()
    return step


def norms(reps):
    for name, make in [("Layer", lambda n: torch.nn.LayerNorm(n)),
                       ("Rms", lambda n: torch.nn.RMSNorm(n, eps=1e-6))]:
        for label, shape in NORM_SHAPES:
            norm = make(shape[-1]).cuda()
            print(f"{name} {label}\t{median_ms(norm_step(norm, shape), reps):.4f}", flush=True)
    for label, shape in NORM_SHAPES:
        # The harness alone (y = x): the floor under every row of that shape.
        print(f"Loss {label}\t{median_ms(norm_step(lambda x: x, shape), reps):.4f}", flush=True)
    for label, shape, groups in GROUP_CASES:
        norm = torch.nn.GroupNorm(groups, shape[1]).cuda()
        print(f"{label}\t{median_ms(norm_step(norm, shape), reps):.4f}", flush=True)


def attention_step(b, h, t, d, cap):
    shape = (b, t, h * d)
    q0, k0, v0, d_out = (torch.randn(shape, device="cuda") for _ in range(4))
    future = torch.ones(t, t, dtype=torch.bool, device="cuda").triu(1)

    def heads(x):
        return x.view(b, t, h, d).transpose(1, 2)

    def step():
        q, k, v = (x.detach().requires_grad_() for x in (q0, k0, v0))
        if cap is None:
            o = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
        else:
            s = heads(q) @ heads(k).transpose(-1, -2) / d ** 0.5
            s = cap * torch.tanh(s / cap)
            o = torch.softmax(s.masked_fill(future, float("-inf")), -1) @ heads(v)
        o = o.transpose(1, 2).reshape(shape)
        (o * d_out).sum().backward()
    return step


def attention(reps):
    for cap in (None, 50.0):
        for case in ATTENTION_CASES:
            label = f"{list(case)}" + ("" if cap is None else f" cap {cap:g}")
            ms = median_ms(attention_step(*case, cap), reps)
            print(f"{label}\t{ms:.4f}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("table", choices=["norms", "attention"])
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit(1)
    torch.manual_seed(0)
    {"norms": norms, "attention": attention}[args.table](args.reps)


if __name__ == "__main__":
    main()
