//! The machine's f32 FMA peak, measured: each of `T` threads runs a loop of independent
//! 512-bit fused multiply-adds (256-bit on CPUs without AVX-512F) and nothing else, and the
//! table prints the flops per second of one thread alone and of `T` at once. This is the
//! "peak" the training-step benchmarks divide by (PERFORMANCE.md §25–§28); measuring it
//! includes whatever clock the cores boost to under that load, which a nominal clock misses.
//!
//! ```text
//! cargo run --release -p addnorm-kernels --example fma_peak          # 1 and all threads
//! cargo run --release -p addnorm-kernels --example fma_peak -- 2     # 1 and 2 threads
//! ```
//!
//! # Formula
//! Each loop iteration issues `ACCUMULATORS` independent FMAs of `L` lanes (`L = 16` or
//! 8), each 2 flops: `GFLOP/s = 2 · L · ACCUMULATORS · iterations / seconds / 10⁹`, summed
//! over the threads. Twelve accumulators cover an FMA latency of 4 cycles on two pipes
//! (8 in flight) with room to spare. The median of 7 timed repeats is kept.

use std::time::Instant;

/// Independent FMA chains per thread.
const ACCUMULATORS: usize = 12;

/// Loop iterations per timed repeat: about 0.1 s at 100 GFLOP/s per thread.
const ITERATIONS: u64 = 30_000_000;

#[cfg(target_arch = "x86_64")]
mod fma {
    use super::{ACCUMULATORS, ITERATIONS};
    use std::arch::x86_64::*;

    /// `ITERATIONS` rounds of `ACCUMULATORS` 512-bit FMAs; returns a sum so that the loop
    /// is not removed.
    ///
    /// # Safety
    /// The CPU must have AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn wide(seed: f32) -> f32 {
        let (a, b) = (_mm512_set1_ps(0.999_999), _mm512_set1_ps(seed * 1e-7));
        let mut acc = [_mm512_set1_ps(seed); ACCUMULATORS];
        for _ in 0..ITERATIONS {
            for v in &mut acc {
                *v = _mm512_fmadd_ps(*v, a, b);
            }
        }
        acc.iter().map(|&v| _mm512_reduce_add_ps(v)).sum()
    }

    /// As [`wide`] with 256-bit FMAs.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn narrow(seed: f32) -> f32 {
        let (a, b) = (_mm256_set1_ps(0.999_999), _mm256_set1_ps(seed * 1e-7));
        let mut acc = [_mm256_set1_ps(seed); ACCUMULATORS];
        for _ in 0..ITERATIONS {
            for v in &mut acc {
                *v = _mm256_fmadd_ps(*v, a, b);
            }
        }
        let mut lanes = [0.0f32; 8];
        let mut total = 0.0;
        for v in acc {
            // SAFETY: 8 f32 lanes into an 8-element array.
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), v) };
            total += lanes.iter().sum::<f32>();
        }
        total
    }
}

/// The lanes of the widest FMA this CPU has, and one thread's loop on it.
fn kernel() -> (usize, fn(f32) -> f32) {
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512f") {
            // SAFETY: AVX-512F was detected.
            return (16, |s| unsafe { fma::wide(s) });
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            // SAFETY: AVX2 and FMA were detected.
            return (8, |s| unsafe { fma::narrow(s) });
        }
    }
    panic!("fma_peak needs an x86-64 CPU with AVX2 and FMA")
}

/// GFLOP/s of `threads` threads running the loop at once: the median of 7 repeats.
fn measure(threads: usize) -> f64 {
    let (lanes, run) = kernel();
    let mut rates: Vec<f64> = (0..7)
        .map(|_| {
            let start = Instant::now();
            let sink: f32 = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..threads)
                    .map(|t| scope.spawn(move || run(1.0 + t as f32)))
                    .collect();
                handles.into_iter().map(|h| h.join().expect("a loop")).sum()
            });
            let seconds = start.elapsed().as_secs_f64();
            std::hint::black_box(sink);
            let flops = 2 * lanes * ACCUMULATORS * threads;
            flops as f64 * ITERATIONS as f64 / seconds / 1e9
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

fn main() {
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads: usize = std::env::args().nth(1).map_or(all, |t| {
        t.parse().expect("the thread count is a positive integer")
    });
    let (lanes, _) = kernel();
    println!("f32 FMA peak, {}-bit vectors, median of 7", lanes * 32);
    println!("{:>8} {:>12} {:>16}", "threads", "GFLOP/s", "per thread");
    for t in [1, threads] {
        let rate = measure(t);
        println!("{t:>8} {rate:>12.1} {:>16.1}", rate / t as f64);
    }
}
