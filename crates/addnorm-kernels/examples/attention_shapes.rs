//! The fused CPU attention of a training step, timed alone: the forward
//! ([`attention::cpu::forward`]) and the backward ([`attention::cpu::backward`]) on the
//! `[batch, T, d_model]` shapes of the lab's models, causal, on rayon's global pool (set
//! `RAYON_NUM_THREADS`). `attention_shapes_torch.py` times `scaled_dot_product_attention`
//! on the same shapes, from the same `[batch, T, d_model]` projections.
//!
//! ```text
//! cargo run --release -p addnorm-kernels --example attention_shapes
//! ROUNDS=5 ONLY=d128 cargo run --release -p addnorm-kernels --example attention_shapes
//! ```
//!
//! Each case runs its forward and its backward `CALLS` times (20 for the large model, 400
//! for the small ones) after 5 unmeasured calls; the table prints the median and the
//! rate in GFLOP/s, counting `2·T_q·n_k·d_head` per product over the query blocks the
//! kernels run (2 products forward, 5 backward). `ROUNDS=r` repeats this and keeps each
//! column's fastest median (fastest call with `MIN` set): the hosts are shared and noisy.
//! With `COLD=N`, the calls cycle through `N` copies of their operands and outputs (about
//! 9 MiB a copy for d128: 8 put them out of a 32 MiB L3), as in a training step, where a
//! layer's attention reads what was written several layers ago. PERFORMANCE.md §30 quotes
//! it.

use addnorm_kernels::attention::cpu::{QUERY_BLOCK, backward, forward};
use addnorm_kernels::attention::spec::{AttentionSpec, HeadLayout};

#[path = "shared/timing.rs"]
mod timing;
use addnorm_kernels::cpu::aligned::Aligned;
use timing::{announced_rounds, best_of, cold_copies, operand, time};

/// `(label, batch, T, heads, d_head)`: the lab's models' attention.
const CASES: [(&str, usize, usize, usize, usize); 3] = [
    ("d128 T128: 16 x 128, 4 heads of 32", 16, 128, 4, 32),
    ("small: 32 x 17, 4 heads of 16", 32, 17, 4, 16),
    ("demo: 32 x 17, 2 heads of 16", 32, 17, 2, 16),
];

/// Multiply-adds ×2 of one product over the causal query blocks: `Σ_blocks rows·n_k·d`.
fn product_flops(layout: HeadLayout) -> f64 {
    let per_head: usize = (0..layout.seq)
        .step_by(QUERY_BLOCK)
        .map(|i0| {
            let i1 = (i0 + QUERY_BLOCK).min(layout.seq);
            (i1 - i0) * i1 * layout.d_head
        })
        .sum();
    2.0 * (per_head * layout.batch * layout.heads) as f64
}

/// One copy of a call's operands and outputs.
struct Operands {
    q: Aligned<f32>,
    k: Aligned<f32>,
    v: Aligned<f32>,
    grad: Aligned<f32>,
    out: Vec<f32>,
    lse: Vec<f32>,
    grads: [Vec<f32>; 3],
}

impl Operands {
    fn new(layout: HeadLayout, copy: usize) -> Self {
        let len = layout.len();
        let [q, k, v, grad] = [1, 2, 3, 4].map(|s| operand(len, s + 8 * copy));
        Self {
            q,
            k,
            v,
            grad,
            out: vec![0.0; len],
            lse: vec![0.0; layout.batch * layout.heads * layout.seq],
            grads: [(); 3].map(|()| vec![0.0; len]),
        }
    }
}

/// The forward's and the backward's seconds for one case ([`time`]).
fn measure(layout: HeadLayout, calls: usize) -> [f64; 2] {
    let spec = AttentionSpec::causal(layout.heads, layout.d_head);
    let mut copies: Vec<Operands> = (0..cold_copies())
        .map(|copy| Operands::new(layout, copy))
        .collect();
    let count = copies.len();
    let mut next = 0;
    let fwd = time(calls, || {
        next = (next + 1) % count;
        let c = &mut copies[next];
        forward::forward(layout, &spec, [&c.q, &c.k, &c.v], &mut c.out, &mut c.lse);
    });
    let bwd = time(calls, || {
        next = (next + 1) % count;
        let c = &mut copies[next];
        let saved = backward::Saved {
            q: &c.q,
            k: &c.k,
            v: &c.v,
            output: &c.out,
            lse: &c.lse,
        };
        let [dq, dk, dv] = &mut c.grads;
        backward::backward(layout, &spec, saved, &c.grad, [dq, dk, dv]);
    });
    [fwd, bwd]
}

fn main() {
    let only = std::env::var("ONLY").ok();
    let rounds = announced_rounds();
    println!("| case | forward ms | GFLOP/s | backward ms | GFLOP/s |\n|---|---|---|---|---|");
    for (label, batch, seq, heads, d_head) in CASES {
        if only.as_deref().is_some_and(|o| !label.contains(o)) {
            continue;
        }
        let layout = HeadLayout {
            batch,
            seq,
            heads,
            d_head,
        };
        let calls = if seq > 64 { 20 } else { 400 };
        let [fwd, bwd] = best_of(rounds, || measure(layout, calls));
        let flops = product_flops(layout);
        println!(
            "| {label} | {:.3} | {:.1} | {:.3} | {:.1} |",
            fwd * 1e3,
            2.0 * flops / fwd / 1e9,
            bwd * 1e3,
            5.0 * flops / bwd / 1e9,
        );
    }
}
