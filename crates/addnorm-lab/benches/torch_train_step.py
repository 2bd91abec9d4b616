#!/usr/bin/env python3
"""PyTorch's side of benches/train_step.rs: one training step (forward, masked cross-entropy,
backward, AdamW) of the same decoder-only Pre-LN transformer as addnorm's TransformerStack,
on the CPU, for the bench's models.

The model, as in crates/addnorm-nn/src/block/stack.rs:

    x0 = E_tok[tokens] + E_pos[0..T]
    x  = x + Wo·SDPA_causal(Wq·LN(x), Wk·LN(x), Wv·LN(x))     per block, heads of d/h
    x  = x + W2·GELU(W1·LN(x))                                 (exact erf GELU)
    logits = Head(LN(x))                                       every Linear has a bias
    loss = −Σ m·log_softmax(logits)[target] / Σ m

Batches: the reverse task's shape for the seq-17 models (vocabulary 13, batch 32, the answer
half masked in) and random tokens for the seq-128 model (batch 16, the second half masked in),
as the Rust bench builds them. Prints one JSON line per model: {"model": ..., "median_ms": ...,
"phases_ms": [forward with the loss, backward, optimizer step]} (each phase's own median).

    python3 benches/torch_train_step.py --threads 2 --steps 40
    python3 benches/torch_train_step.py --model "d128 T128 (LayerNorm)"   # one model

An unknown --model exits with code 2 and lists the names.
"""

import argparse
import json
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 13
# name: (depth, d_model, heads, d_ff, batch, seq, norm)
MODELS = {
    "tiny (LayerNorm)": (2, 32, 2, 128, 32, 17, "layer"),
    "small (LayerNorm)": (4, 64, 4, 256, 32, 17, "layer"),
    "small (RMSNorm)": (4, 64, 4, 256, 32, 17, "rms"),
    "demo (LayerNorm)": (6, 32, 2, 128, 32, 17, "layer"),
    "d128 T128 (LayerNorm)": (4, 128, 4, 512, 16, 128, "layer"),
}


def norm(kind, d):
    return nn.LayerNorm(d) if kind == "layer" else nn.RMSNorm(d, eps=1e-5)


class Block(nn.Module):
    def __init__(self, d, heads, d_ff, kind):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = norm(kind, d), norm(kind, d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ff1, self.ff2 = nn.Linear(d, d_ff), nn.Linear(d_ff, d)

    def attention(self, x):
        b, t, d = x.shape

        def split(p):
            return p(x).view(b, t, self.heads, d // self.heads).transpose(1, 2)

        o = F.scaled_dot_product_attention(split(self.q), split(self.k), split(self.v), is_causal=True)
        return self.o(o.transpose(1, 2).reshape(b, t, d))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.ff2(F.gelu(self.ff1(self.norm2(x))))


class Stack(nn.Module):
    def __init__(self, depth, d, heads, d_ff, seq, kind):
        super().__init__()
        self.tok, self.pos = nn.Embedding(VOCAB, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, d_ff, kind) for _ in range(depth))
        self.final, self.head = norm(kind, d), nn.Linear(d, VOCAB)

    def forward(self, tokens):
        x = self.tok(tokens) + self.pos(torch.arange(tokens.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.final(x))


def batches(batch, seq, count=8):
    g = torch.Generator().manual_seed(0)
    mask = torch.zeros(batch, seq)
    mask[:, seq // 2 + 1 :] = 1.0
    return [
        (torch.randint(3, VOCAB, (batch, seq), generator=g),
         torch.randint(3, VOCAB, (batch, seq), generator=g), mask)
        for _ in range(count)
    ]


def time_model(spec, steps):
    depth, d, heads, d_ff, batch, seq, kind = spec
    torch.manual_seed(0)
    model = Stack(depth, d, heads, d_ff, seq, kind)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = batches(batch, seq)

    def step(i):
        tokens, targets, mask = data[i % len(data)]
        start = time.perf_counter()
        logits = model(tokens)
        picked = F.log_softmax(logits, -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        loss = -(picked * mask).sum() / mask.sum()
        forward = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        backward = time.perf_counter()
        optimizer.step()
        end = time.perf_counter()
        return (forward - start, backward - forward, end - backward, end - start)

    for i in range(5):
        step(i)
    times = [step(i) for i in range(steps)]
    return [statistics.median(t[k] for t in times) for k in range(4)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--model", choices=list(MODELS), help="only this model")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for name, spec in MODELS.items():
        if args.model is not None and name != args.model:
            continue
        steps = args.steps if spec[5] <= 32 else max(5, args.steps // 4)
        *phases, total = (t * 1e3 for t in time_model(spec, steps))
        print(json.dumps({"model": name, "median_ms": total, "phases_ms": phases}), flush=True)


if __name__ == "__main__":
    main()
