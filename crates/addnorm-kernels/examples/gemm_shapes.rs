//! The GEMM shapes of a training step, timed alone on one thread through the kernels'
//! strided GEMM (`matrixmultiply`'s `sgemm`, whose widest kernel the CPU has is picked at run
//! time; with the `avx512` feature that `addnorm-kernels` turns on, AVX-512 where present).
//!
//! ```text
//! cargo run --release -p addnorm-kernels --example gemm_shapes
//! COLD=1 cargo run --release -p addnorm-kernels --example gemm_shapes   # operands out of cache
//! ```
//!
//! Each shape `C[m, n] = A[m, k]·B[k, n]` (A or B read transposed where the step reads them
//! so) runs 60 times; the table prints the median of the last 50 and GFLOP/s (2·m·k·n per
//! call). With `COLD` set, 16 copies of A and B are cycled through, so the operands come
//! from memory rather than cache. PERFORMANCE.md §6 quotes this example's figures.

use std::time::Instant;

/// `(label, m, k, n, A read transposed, B read transposed)`: the d_model 128, T = 128
/// model's projections (2048 rows), its feed-forward, a weight gradient, an input gradient,
/// the small model's shapes (544 rows) and one attention block.
const CASES: [(&str, usize, usize, usize, bool, bool); 9] = [
    ("fwd 2048x128 . 128x128", 2048, 128, 128, false, false),
    ("fwd 2048x128 . 128x512", 2048, 128, 512, false, false),
    ("fwd 2048x512 . 512x128", 2048, 512, 128, false, false),
    (
        "dW  128x2048 . 2048x128 (A = Xt)",
        128,
        2048,
        128,
        true,
        false,
    ),
    (
        "dX  2048x128 . 128x128 (B = Wt)",
        2048,
        128,
        128,
        false,
        true,
    ),
    ("fwd 544x32 . 32x128", 544, 32, 128, false, false),
    ("fwd 544x128 . 128x32", 544, 128, 32, false, false),
    (
        "fwd 1024x128 . 128x512 (half the rows)",
        1024,
        128,
        512,
        false,
        false,
    ),
    ("attn 64x32 . 32x128 (S = Q.Kt)", 64, 32, 128, false, true),
];

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `len` deterministic values.
fn operand(len: usize, modulus: usize) -> Vec<f32> {
    (0..len).map(|i| (i % modulus) as f32 * 0.01).collect()
}

fn main() {
    let copies = if std::env::var_os("COLD").is_some() {
        16
    } else {
        1
    };
    println!("one thread, median of 50 calls; {copies} copies of the operands cycled");
    println!("{:<40} {:>10} {:>9}", "shape", "median", "GFLOP/s");
    for (label, m, k, n, a_t, b_t) in CASES {
        let a: Vec<Vec<f32>> = (0..copies).map(|_| operand(m * k, 97)).collect();
        let b: Vec<Vec<f32>> = (0..copies).map(|_| operand(k * n, 89)).collect();
        let mut c = vec![0f32; m * n];
        // A stored as [m, k] row-major, or as [k, m] read transposed; B likewise.
        let (ars, acs) = if a_t {
            (1, m as isize)
        } else {
            (k as isize, 1)
        };
        let (brs, bcs) = if b_t {
            (1, k as isize)
        } else {
            (n as isize, 1)
        };
        let mut times = vec![];
        for rep in 0..60 {
            let (a, b) = (&a[rep % copies], &b[rep % copies]);
            let start = Instant::now();
            // SAFETY: the strides address only elements of a, b and c, which outlive the
            // call; c is written by this call alone.
            unsafe {
                matrixmultiply::sgemm(
                    m,
                    k,
                    n,
                    1.0,
                    a.as_ptr(),
                    ars,
                    acs,
                    b.as_ptr(),
                    brs,
                    bcs,
                    0.0,
                    c.as_mut_ptr(),
                    n as isize,
                    1,
                );
            }
            if rep >= 10 {
                times.push(start.elapsed().as_secs_f64());
            }
        }
        let t = median(times);
        let flops = 2.0 * (m * k * n) as f64;
        println!("{label:<40} {:>7.3} ms {:>9.1}", t * 1e3, flops / t / 1e9);
        std::hint::black_box(&c);
    }
}
