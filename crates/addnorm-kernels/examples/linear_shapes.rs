//! The fused CPU linear kernels of the d128/T128 training step, timed alone on rayon's
//! global pool (set `RAYON_NUM_THREADS`): the forward with its bias
//! ([`linear::cpu::forward`]), the input gradient ([`linear::cpu::backward_input`]) and the
//! weight and bias gradients ([`linear::cpu::backward_parameters`]).
//! `linear_shapes_torch.py` times `addmm`, `dy·wᵀ` and `xᵀ·dy` with `dy.sum(0)` on the same
//! shapes.
//!
//! ```text
//! ROUNDS=5 cargo run --release -p addnorm-kernels --example linear_shapes
//! ```
//!
//! Each call runs 30 times after 5 unmeasured ones; the table prints the median of the
//! fastest of `ROUNDS` rounds (the hosts are shared and noisy) and GFLOP/s (`2·rows·d_in·d_out`
//! per call). With `MIN` set, each round keeps its fastest call instead of its median.
//! With `COLD=N`, the calls cycle through `N` copies of their operands (about 5 MiB a copy
//! for the feed-forward layers: 16 put them out of a 48 MiB L3), as in a training step,
//! where each layer's operands were last touched several layers ago. The operands start on
//! 64-byte lines, as the kernels' outputs do; `OFFSET=4` puts them 16 bytes past one, where
//! glibc's `malloc` starts a large `Vec` (PERFORMANCE.md §39). With `KEEP=N`, the forward's
//! and dX's last `N` outputs stay alive, so each call writes memory last touched `N` calls
//! before, as a training step does, not the buffer its previous call freed (§45).
//! PERFORMANCE.md §30 quotes it.

use addnorm_kernels::cpu::aligned::Aligned;
use addnorm_kernels::linear::cpu::{LinearDims, backward_input, backward_parameters, forward};

#[path = "shared/timing.rs"]
mod timing;
use timing::{announced_rounds, best_of, cold_copies, operand, time};

/// `(label, rows, d_in, d_out)`: the d128/T128 model's layers (batch 16 × T 128 rows).
const CASES: [(&str, usize, usize, usize); 3] = [
    ("projection 2048 x 128 -> 128", 2048, 128, 128),
    ("feed-forward in 2048 x 128 -> 512", 2048, 128, 512),
    ("feed-forward out 2048 x 512 -> 128", 2048, 512, 128),
];

/// The last `KEEP` outputs (none when unset), kept alive so that each new one lands in
/// memory last written `KEEP` calls ago, as a training step's outputs do (they come from
/// the output pool, freed by an earlier step's backward).
struct Kept {
    outputs: std::collections::VecDeque<Aligned<f32>>,
    most: usize,
}

impl Kept {
    fn new() -> Self {
        let most = std::env::var("KEEP").map_or(0, |k| k.parse().expect("KEEP"));
        Self {
            outputs: std::collections::VecDeque::new(),
            most,
        }
    }

    fn keep(&mut self, output: Aligned<f32>) {
        if self.most > 0 {
            self.outputs.push_back(output);
            if self.outputs.len() > self.most {
                self.outputs.pop_front();
            }
        }
    }
}

fn main() {
    let rounds = announced_rounds();
    println!("| layer | forward ms | GFLOP/s | dX ms | GFLOP/s | dW, db ms | GFLOP/s |");
    println!("|---|---|---|---|---|---|---|");
    for (label, rows, d_in, d_out) in CASES {
        let dims = LinearDims { rows, d_in, d_out };
        let copies: Vec<[Aligned<f32>; 4]> = (0..cold_copies())
            .map(|copy| {
                [
                    (rows * d_in, 1),
                    (d_in * d_out, 2),
                    (d_out, 3),
                    (rows * d_out, 4),
                ]
                .map(|(len, seed)| operand(len, seed + 8 * copy))
            })
            .collect();
        let mut next = 0;
        let mut cycle = || {
            next = (next + 1) % copies.len();
            &copies[next]
        };
        let mut kept = Kept::new();
        let best = best_of(rounds, || {
            [
                time(30, || {
                    let [x, w, b, _] = cycle();
                    kept.keep(forward(dims, x, w, Some(b)));
                }),
                time(30, || {
                    let [_, w, _, dy] = cycle();
                    kept.keep(backward_input(dims, dy, w));
                }),
                time(30, || {
                    let [x, _, _, dy] = cycle();
                    backward_parameters(dims, x, dy, true)
                }),
            ]
        });
        let flops = 2.0 * (rows * d_in * d_out) as f64;
        let cells: Vec<String> = best
            .iter()
            .map(|t| format!("{:.3} | {:.1}", t * 1e3, flops / t / 1e9))
            .collect();
        println!("| {label} | {} |", cells.join(" | "));
    }
}
