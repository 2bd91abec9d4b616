//! The fused CPU LayerNorm kernels of the training steps in `train_step`, timed alone on
//! rayon's global pool (set `RAYON_NUM_THREADS`), into buffers that live across calls: the
//! forward ([`forward`]: `y` and the saved statistics) and the backward ([`backward`]: dx,
//! dγ and dβ from x, dy and the statistics). `norm_shapes_torch.py` times
//! `native_layer_norm` and `native_layer_norm_backward` on the same shapes.
//!
//! ```text
//! ROUNDS=5 cargo run --release -p addnorm-kernels --example norm_shapes
//! ```
//!
//! Each call runs 30 times after 5 unmeasured ones; the table prints the median of the
//! fastest of `ROUNDS` rounds (its fastest call with `MIN` set) and the bandwidth the call
//! reaches counting 8 bytes an element forward (read x, write y) and 12 backward (read x and
//! dy, write dx). PERFORMANCE.md §35 quotes it.

use addnorm_kernels::RowNormSpec;
use addnorm_kernels::norm::cpu::{backward::backward, forward::forward, plan::RowPlan};

#[path = "shared/timing.rs"]
mod timing;
use timing::{announced_rounds, best_of, operand, time};

/// `(label, rows, n)`: the LayerNorm inputs of `train_step`'s models (batch × T rows).
const CASES: [(&str, usize, usize); 3] = [
    ("d128 T128: 2048 x 128", 2048, 128),
    ("small: 544 x 64", 544, 64),
    ("demo, tiny: 544 x 32", 544, 32),
];

fn main() {
    let rounds = announced_rounds();
    println!("| rows x n | forward ms | GB/s | backward ms | GB/s |");
    println!("|---|---|---|---|---|");
    for (label, rows, n) in CASES {
        let plan = RowPlan::<f32>::new(&RowNormSpec::layer_norm(1e-5), n);
        let x = operand(rows * n, 1);
        let dy = operand(rows * n, 2);
        let gamma: Vec<f32> = operand(n, 3).iter().map(|g| 1.0 + g / 4.0).collect();
        let beta = operand(n, 4);
        let (mut shift, mut rstd) = (vec![0.0; rows], vec![0.0; rows]);
        let (mut y, mut dx) = (vec![0.0; rows * n], vec![0.0; rows * n]);
        let best = best_of(rounds, || {
            [
                time(30, || {
                    forward(&plan, &x, &gamma, &beta, &mut y, &mut shift, &mut rstd)
                }),
                time(30, || {
                    backward(&plan, &x, &dy, &gamma, &shift, &rstd, &mut dx)
                }),
            ]
        });
        let elements = (rows * n) as f64;
        let cells: Vec<String> = best
            .iter()
            .zip([8.0, 12.0])
            .map(|(t, bytes)| format!("{:.3} | {:.1}", t * 1e3, elements * bytes / t / 1e9))
            .collect();
        println!("| {label} | {} |", cells.join(" | "));
    }
}
