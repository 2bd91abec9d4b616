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
//! PERFORMANCE.md §30 quotes it.

use addnorm_kernels::attention::cpu::{QUERY_BLOCK, backward, forward};
use addnorm_kernels::attention::spec::{AttentionSpec, HeadLayout};

#[path = "shared/timing.rs"]
mod timing;
use timing::{announced_rounds, best_of, operand, time};

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

/// The forward's and the backward's seconds for one case ([`time`]).
fn measure(layout: HeadLayout, calls: usize) -> [f64; 2] {
    let spec = AttentionSpec::causal(layout.heads, layout.d_head);
    let len = layout.len();
    let [q, k, v, grad] = [1, 2, 3, 4].map(|s| operand(len, s));
    let (mut out, mut lse) = (
        vec![0.0; len],
        vec![0.0; layout.batch * layout.heads * layout.seq],
    );
    let fwd = time(calls, || {
        forward::forward(layout, &spec, [&q, &k, &v], &mut out, &mut lse);
    });
    let [mut dq, mut dk, mut dv] = [(); 3].map(|()| vec![0.0; len]);
    let saved = backward::Saved {
        q: &q,
        k: &k,
        v: &v,
        output: &out,
        lse: &lse,
    };
    let bwd = time(calls, || {
        backward::backward(layout, &spec, saved, &grad, [&mut dq, &mut dk, &mut dv]);
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
