//! The fused CPU GELU kernels of the training steps in `train_step`, timed alone on rayon's
//! global pool (set `RAYON_NUM_THREADS`), on the feed-forward's hidden activations
//! (`[batch·T, d_ff]`): the forward the autodiff node runs
//! ([`forward_with_slope_in_place`]: `y = x·Φ(x)`, and `GELU'(x)` written over `x`) and its
//! backward ([`backward_from_slope_in_place`]: `dx = dy·GELU'(x)` over `dy`).
//! `gelu_shapes_torch.py` times `aten::gelu` and `aten::gelu_backward` (which evaluates
//! Φ and φ again from `x`) on the same shapes.
//!
//! ```text
//! ROUNDS=5 cargo run --release -p addnorm-kernels --example gelu_shapes
//! ```
//!
//! Each call runs 30 times after 5 unmeasured ones, in place (the forward's input is then
//! the last call's slope, the backward's the last call's dx: the loops have no branch, so
//! the values do not change the time); the table prints the median of the fastest of
//! `ROUNDS` rounds (its fastest call with `MIN` set), the nanoseconds per element and
//! forward + backward, the two calls a training step makes. PERFORMANCE.md §43 quotes it.

use core::mem::MaybeUninit;

use addnorm_kernels::gelu::cpu::{backward_from_slope_in_place, forward_with_slope_in_place};

#[path = "shared/timing.rs"]
mod timing;
use timing::{announced_rounds, best_of, operand, time};

/// `(label, rows, d_ff)`: the feed-forward's hidden width of `train_step`'s models.
const CASES: [(&str, usize, usize); 3] = [
    ("d128 T128: 2048 x 512", 2048, 512),
    ("small: 544 x 256", 544, 256),
    ("demo, tiny: 544 x 128", 544, 128),
];

fn main() {
    let rounds = announced_rounds();
    println!("| rows x d_ff | forward ms | ns/element | backward ms | ns/element | both ms |");
    println!("|---|---|---|---|---|---|");
    for (label, rows, n) in CASES {
        let len = rows * n;
        // Pre-activations spread over both sides of the erf series' cut (|x| ≈ 1.06).
        let mut x_then_slope: Vec<f32> = operand(len, 1).iter().map(|v| 3.0 * v).collect();
        let mut grad: Vec<f32> = operand(len, 2).to_vec();
        let mut y = vec![MaybeUninit::<f32>::uninit(); len];
        let best = best_of(rounds, || {
            [
                time(30, || {
                    forward_with_slope_in_place(&mut x_then_slope, &mut y)
                }),
                time(30, || {
                    backward_from_slope_in_place(&x_then_slope, &mut grad)
                }),
            ]
        });
        let per = |t: f64| t * 1e9 / len as f64;
        println!(
            "| {label} | {:.3} | {:.2} | {:.3} | {:.2} | {:.3} |",
            best[0] * 1e3,
            per(best[0]),
            best[1] * 1e3,
            per(best[1]),
            (best[0] + best[1]) * 1e3
        );
    }
}
