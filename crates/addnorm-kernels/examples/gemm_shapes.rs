//! The GEMM shapes of a training step, timed alone on one thread through `matrixmultiply`'s
//! `sgemm` (whose widest kernel the CPU has is picked at run time; with the `avx512` feature
//! that `addnorm-kernels` turns on, AVX-512 where present) and through the kernels' strided
//! GEMM, which runs its direct kernel (AVX-512 or AVX2 + FMA) where it takes the call.
//!
//! ```text
//! cargo run --release -p addnorm-kernels --example gemm_shapes
//! COLD=1 cargo run --release -p addnorm-kernels --example gemm_shapes   # operands out of cache
//! ROUNDS=6 ONLY=d512 cargo run --release -p addnorm-kernels --example gemm_shapes
//! COLD=400 MIN=1 ONLY=dW cargo run --release -p addnorm-kernels --example gemm_shapes
//! ```
//!
//! Each shape `C[m, n] = A[m, k]·B[k, n]` (A or B read transposed where the step reads them
//! so) runs 60 times; the table prints the median of the last 50 and GFLOP/s (2·m·k·n per
//! call). `ROUNDS=r` times the two paths alternately r times and keeps each one's fastest
//! median, so that a slow spell of a shared host does not fall on one column alone;
//! `ONLY=text` keeps the shapes whose label contains `text`. With `COLD` set, 16 copies of
//! A and B are cycled through, so the operands come from L3 rather than L1 or L2; `COLD=N`
//! cycles N copies (each used once when N ≥ 60: a few hundred put them out of a 48 MiB
//! L3, in memory). `MIN` takes each path's fastest call instead of its median, which a
//! noisy host disturbs less (noise only adds time). A, B and C start on 64-byte lines, as
//! the kernels' outputs do in a step (PERFORMANCE.md §39; before it they were `Vec`s).
//! PERFORMANCE.md §6 quotes this example's figures.

use addnorm_kernels::cpu::aligned::Aligned;
use addnorm_kernels::cpu::gemm::{Gemm, Strided};
use std::time::Instant;

/// `(label, m, k, n, A read transposed, B read transposed)`: the weight-gradient blocks a
/// d_model 128, T = 128 training step runs (its dW sums 8 blocks of 256 of the 2048 rows)
/// and one of its attention products, first; then that model's projections (2048 rows), its
/// feed-forward, a whole weight gradient, an input gradient, the demo model's (d 32, 544
/// rows) and the per-head attention products of both.
const CASES: [(&str, usize, usize, usize, bool, bool); 28] = [
    (
        "d128 dW block 128x256 . 256x128 (A = Xt)",
        128,
        256,
        128,
        true,
        false,
    ),
    (
        "d128 dW block 512x256 . 256x128 (A = Xt)",
        512,
        256,
        128,
        true,
        false,
    ),
    (
        "d128 dW block 128x256 . 256x512 (A = Xt)",
        128,
        256,
        512,
        true,
        false,
    ),
    (
        "d128 attn 64x32 . 32x128 (S = Q.Kt)",
        64,
        32,
        128,
        false,
        true,
    ),
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
    (
        "fwd 1024x128 . 128x512 (half the rows)",
        1024,
        128,
        512,
        false,
        false,
    ),
    ("attn 128x32 . 32x128 (S = Q.Kt)", 128, 32, 128, false, true),
    (
        "attn 128x128 . 128x32 (O = P.V)",
        128,
        128,
        32,
        false,
        false,
    ),
    ("demo fwd 544x32 . 32x32", 544, 32, 32, false, false),
    ("demo fwd 544x32 . 32x128", 544, 32, 128, false, false),
    ("demo fwd 544x128 . 128x32", 544, 128, 32, false, false),
    (
        "demo dX 544x128 . 128x32 (B = Wt)",
        544,
        128,
        32,
        false,
        true,
    ),
    (
        "demo dW 32x544 . 544x128 (A = Xt)",
        32,
        544,
        128,
        true,
        false,
    ),
    (
        "demo dW 128x544 . 544x32 (A = Xt)",
        128,
        544,
        32,
        true,
        false,
    ),
    ("demo eval 4352x32 . 32x96", 4352, 32, 96, false, false),
    ("demo eval 4352x32 . 32x128", 4352, 32, 128, false, false),
    ("demo eval 4352x128 . 128x32", 4352, 128, 32, false, false),
    ("small fwd 544x64 . 64x256", 544, 64, 256, false, false),
    (
        "small dW 64x544 . 544x256 (A = Xt)",
        64,
        544,
        256,
        true,
        false,
    ),
    ("d512 fwd 272x512 . 512x1536", 272, 512, 1536, false, false),
    (
        "d512 dX 272x1024 . 1024x512 (B = Wt)",
        272,
        1024,
        512,
        false,
        true,
    ),
    (
        "demo attn 17x16 . 16x17 (S = Q.Kt)",
        17,
        16,
        17,
        false,
        true,
    ),
    (
        "demo attn 17x17 . 17x16 (O = P.V)",
        17,
        17,
        16,
        false,
        false,
    ),
    (
        "demo attn 17x17 . 17x16 (dV = Pt.dO)",
        17,
        17,
        16,
        true,
        false,
    ),
];

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `len` deterministic values, starting on a 64-byte line as the kernels' outputs do.
fn operand(len: usize, modulus: usize) -> Aligned<f32> {
    // SAFETY: the closure writes all `len` elements.
    unsafe {
        Aligned::written(len, |p: *mut f32| {
            (0..len).for_each(|i| p.add(i).write((i % modulus) as f32 * 0.01))
        })
    }
}

/// The two GEMMs timed: `matrixmultiply`'s packed `sgemm`, and the kernels' [`Gemm`], which
/// runs its direct kernel where it takes the call and `sgemm` elsewhere.
#[derive(Clone, Copy)]
enum Path {
    Packed,
    Kernels,
}

/// One product `C ← A·B` by `path`.
fn product(path: Path, [m, k, n]: [usize; 3], a: Strided<f32>, b: Strided<f32>, c: &mut [f32]) {
    let c = Strided::rows(c.as_mut_ptr(), n);
    // SAFETY: the views address only elements of the caller's buffers, which outlive the
    // call; c is written by this call alone.
    unsafe {
        match path {
            Path::Kernels => f32::gemm([m, k, n], 1.0, a, b, 0.0, c),
            Path::Packed => {
                let [(ars, acs), (brs, bcs)] = [a, b].map(|v| v.strides());
                matrixmultiply::sgemm(
                    m,
                    k,
                    n,
                    1.0,
                    a.ptr(),
                    ars,
                    acs,
                    b.ptr(),
                    brs,
                    bcs,
                    0.0,
                    c.ptr(),
                    n as isize,
                    1,
                )
            }
        }
    }
}

/// Whether `MIN` asks for each path's fastest call instead of its median (module docs).
fn fastest_wanted() -> bool {
    std::env::var_os("MIN").is_some()
}

/// The median seconds (the fastest with `MIN`) of the last 50 of 60 calls by `path`,
/// cycling through the copies.
fn time(path: Path, (m, k, n, a_t, b_t): (usize, usize, usize, bool, bool), copies: usize) -> f64 {
    let mut a: Vec<Aligned<f32>> = (0..copies).map(|_| operand(m * k, 97)).collect();
    let mut b: Vec<Aligned<f32>> = (0..copies).map(|_| operand(k * n, 89)).collect();
    let mut c = Aligned::<f32>::zeroed(m * n);
    // A stored as [m, k] row-major, or as [k, m] read transposed; B likewise.
    let view = |buffer: &mut Aligned<f32>, rows: usize, cols: usize, transposed: bool| {
        if transposed {
            Strided::rows(buffer.as_mut_ptr(), rows).t()
        } else {
            Strided::rows(buffer.as_mut_ptr(), cols)
        }
    };
    let mut times = vec![];
    for rep in 0..60 {
        let a = view(&mut a[rep % copies], m, k, a_t);
        let b = view(&mut b[rep % copies], k, n, b_t);
        let start = Instant::now();
        product(path, [m, k, n], a, b, &mut c);
        if rep >= 10 {
            times.push(start.elapsed().as_secs_f64());
        }
    }
    std::hint::black_box(&c);
    if fastest_wanted() {
        times.into_iter().fold(f64::INFINITY, f64::min)
    } else {
        median(times)
    }
}

fn main() {
    let copies = match std::env::var("COLD") {
        Ok(v) => v.parse().unwrap_or(16),
        Err(_) => 1,
    };
    // ROUNDS and ONLY: see the module docs.
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    let only = std::env::var("ONLY").unwrap_or_default();
    let statistic = if fastest_wanted() {
        "fastest"
    } else {
        "median"
    };
    println!(
        "one thread, {statistic} of 50 calls, the faster of {rounds} alternated rounds; \
         {copies} copies of the operands cycled"
    );
    println!(
        "{:<40} {:>11} {:>11} {:>8} {:>9}",
        "shape", "sgemm", "kernels", "ratio", "GFLOP/s"
    );
    for (label, m, k, n, a_t, b_t) in CASES.into_iter().filter(|c| c.0.contains(&only)) {
        let shape = (m, k, n, a_t, b_t);
        let (mut packed, mut kernels) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..rounds.max(1) {
            packed = packed.min(time(Path::Packed, shape, copies));
            kernels = kernels.min(time(Path::Kernels, shape, copies));
        }
        let flops = 2.0 * (m * k * n) as f64;
        println!(
            "{label:<40} {:>8.2} µs {:>8.2} µs {:>7.2}x {:>9.1}",
            packed * 1e6,
            kernels * 1e6,
            packed / kernels,
            flops / kernels / 1e9
        );
    }
}
