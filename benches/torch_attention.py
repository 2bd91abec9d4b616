#!/usr/bin/env python3
"""PyTorch's side of benches/attention.rs: torch.nn.functional.scaled_dot_product_attention,
causal, forward + backward of loss = sum(O * dO), on the same [batch, heads, T, d_head] cases,
with q, k, v as [batch, T, heads * d_head] projections viewed as heads (as a model does).

Prints one JSON line per case: {"case": [b, h, T, d], "median_ms": ..., "peak_rss_mib": ...}.
The peak is the growth of VmHWM over one step (reset through /proc/self/clear_refs after the
inputs exist), measured in a fresh child process.

    python3 benches/torch_attention.py --threads 2 --reps 30
    python3 benches/torch_attention.py --softcap 50   # eager attention, logits c·tanh(S/c)

With --softcap the attention is eager (scores, cap, mask, softmax, ·V), as Gemma 2's reference
code does it: scaled_dot_product_attention has no soft cap.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

CASES = [(32, 2, 17, 16), (16, 4, 128, 32), (4, 8, 1024, 64)]


def inputs(b, h, t, d):
    g = torch.Generator().manual_seed(0)
    shape = (b, t, h * d)
    q, k, v = (torch.randn(shape, generator=g).requires_grad_() for _ in range(3))
    d_out = torch.randn(shape, generator=g)
    return q, k, v, d_out


SOFTCAP = None


def eager(q, k, v, cap):
    """Causal attention with the logits soft-capped at `cap`."""
    t = q.shape[-2]
    s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    s = cap * torch.tanh(s / cap)
    future = torch.ones(t, t, dtype=torch.bool).triu(1)
    return torch.softmax(s.masked_fill(future, float("-inf")), -1) @ v


def step(q, k, v, d_out, b, h, t, d):
    def heads(x):
        return x.view(b, t, h, d).transpose(1, 2)

    if SOFTCAP is None:
        o = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
    else:
        o = eager(heads(q), heads(k), heads(v), SOFTCAP)
    o = o.transpose(1, 2).reshape(b, t, h * d)
    (o * d_out).sum().backward()
    for x in (q, k, v):
        x.grad = None


def vm_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def child(case):
    q, k, v, d_out = inputs(*case)
    step(q, k, v, d_out, *case)  # warm up the allocator and kernels' first-call state
    before = vm_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    step(q, k, v, d_out, *case)
    print((vm_kib("VmHWM") - before) / 1024)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--child", type=str)
    parser.add_argument("--softcap", type=float)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    global SOFTCAP
    SOFTCAP = args.softcap
    if args.child:
        child(tuple(int(x) for x in args.child.split(",")))
        return
    for case in CASES:
        q, k, v, d_out = inputs(*case)
        reps = max(3, args.reps // (1 + case[2] // 128))
        for _ in range(3):
            step(q, k, v, d_out, *case)
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            step(q, k, v, d_out, *case)
            times.append(time.perf_counter() - start)
        peak = subprocess.run(
            [sys.executable, __file__, "--threads", str(args.threads), "--child",
             ",".join(map(str, case))] + (["--softcap", str(SOFTCAP)] if SOFTCAP else []),
            capture_output=True, text=True, check=True,
        ).stdout.strip()
        print(json.dumps({
            "case": list(case),
            "median_ms": statistics.median(times) * 1e3,
            "peak_rss_mib": float(peak),
        }), flush=True)


if __name__ == "__main__":
    main()
