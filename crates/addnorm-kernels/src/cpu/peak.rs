//! The machine's f32 FMA peak, measured: what the benchmarks divide a step's GFLOP/s by.
//!
//! A nominal clock misses the boost a core runs at under an FMA-only load. On the project's
//! Zen 4 VM the TSC clock gave 166 GFLOP/s for two cores, but the cores ran at about
//! 3.6 GHz: 228–233 GFLOP/s (kernels PERFORMANCE.md §28). So the peak is measured.
//! [`fma_peak_gflops`] runs `threads` OS threads at once, each on a loop of independent
//! fused multiply-adds and nothing else, on the widest vectors the CPU has:
//! - 512-bit with AVX-512F;
//! - 256-bit with AVX2 and FMA.
//!
//! The threads are plain `std` threads, not rayon's. The result is what the hardware gives,
//! whatever pool the caller runs in.
//!
//! # Formula
//! Each loop iteration issues [`ACCUMULATORS`] independent FMAs `acc ← acc·a + b` of `L`
//! lanes (`L = 16` or 8), 2 flops each:
//!
//! ```text
//! GFLOP/s = Σ_threads 2 · L · ACCUMULATORS · iterations / seconds / 10⁹
//! ```
//!
//! Twelve chains cover an FMA latency of 4 cycles on two pipes (8 in flight) with room to
//! spare. The result is the fastest of the repeats: other work on a shared host only ever
//! slows a repeat down, so the fastest is the closest to the peak (a median of 5 once read
//! 156 GFLOP/s on the VM while another guest was busy, against 221–232 otherwise).
//!
//! # Shapes
//! No tensors: `threads` and `repeats` in, GFLOP/s out.

use std::time::Instant;

/// Independent FMA chains per thread.
pub const ACCUMULATORS: usize = 12;

/// Loop iterations per timed repeat: about 0.1 s per thread at 100 GFLOP/s.
const ITERATIONS: u64 = 30_000_000;

/// The f32 lanes of the widest FMA this CPU has: 16 (AVX-512F), 8 (AVX2 and FMA), or
/// `None` (no x86-64 FMA; the peak is not measured there).
pub fn fma_lanes() -> Option<usize> {
    kernel().map(|(lanes, _)| lanes)
}

/// The f32 FMA peak of `threads` threads running at once, in GFLOP/s: the fastest of
/// `repeats` timed runs of about 0.1 s each (see the [module docs](self)). `None` when the
/// CPU has no x86-64 FMA, or `threads` or `repeats` is 0.
pub fn fma_peak_gflops(threads: usize, repeats: usize) -> Option<f64> {
    let (lanes, run) = kernel()?;
    if threads == 0 || repeats == 0 {
        return None;
    }
    let rates = (0..repeats).map(|_| {
        let start = Instant::now();
        let sink: f32 = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| scope.spawn(move || run(1.0 + t as f32, ITERATIONS)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("an FMA loop"))
                .sum()
        });
        let seconds = start.elapsed().as_secs_f64();
        std::hint::black_box(sink);
        (2 * lanes * ACCUMULATORS * threads) as f64 * ITERATIONS as f64 / seconds / 1e9
    });
    rates.max_by(f64::total_cmp)
}

/// One thread's loop: `(seed, iterations)` to the sum of every lane of every chain.
type Loop = fn(f32, u64) -> f32;

/// The lanes and the loop of the widest FMA this CPU has.
fn kernel() -> Option<(usize, Loop)> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: AVX-512F was detected.
            return Some((16, |s, n| unsafe { x86::wide(s, n) }));
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: AVX2 and FMA were detected.
            return Some((8, |s, n| unsafe { x86::narrow(s, n) }));
        }
    }
    None
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::ACCUMULATORS;
    use std::arch::x86_64::*;

    /// The multiplier `a` of every chain, close to 1 so that no value overflows or becomes
    /// subnormal (which would slow the loop down), and the addend `b` as a fraction of
    /// the seed.
    const A: f32 = 0.999_999;
    const B_PER_SEED: f32 = 1e-7;

    /// `iterations` rounds of [`ACCUMULATORS`] 512-bit FMAs from `seed`; the sum of the
    /// chains' lanes.
    ///
    /// # Safety
    /// The CPU must have AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn wide(seed: f32, iterations: u64) -> f32 {
        let (a, b) = (_mm512_set1_ps(A), _mm512_set1_ps(seed * B_PER_SEED));
        let mut acc = [_mm512_set1_ps(seed); ACCUMULATORS];
        for _ in 0..iterations {
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
    pub(super) unsafe fn narrow(seed: f32, iterations: u64) -> f32 {
        let (a, b) = (_mm256_set1_ps(A), _mm256_set1_ps(seed * B_PER_SEED));
        let mut acc = [_mm256_set1_ps(seed); ACCUMULATORS];
        for _ in 0..iterations {
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

    #[cfg(test)]
    pub(super) const CONSTANTS: (f32, f32) = (A, B_PER_SEED);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The loop computes the chains it claims to: each lane ends at the scalar recurrence
    /// `x ← fma(x, a, b)` from the seed, so the sum is `lanes · ACCUMULATORS · x`.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_loop_runs_the_fused_multiply_adds_it_counts() {
        let Some((lanes, run)) = kernel() else {
            return;
        };
        let (a, b_per_seed) = x86::CONSTANTS;
        let seed = 2.0f32;
        let mut x = seed;
        for _ in 0..1000 {
            x = x.mul_add(a, seed * b_per_seed);
        }
        assert!(x < seed, "the chain moves: {x}");
        let expected = (lanes * ACCUMULATORS) as f32 * x;
        let got = run(seed, 1000);
        assert!(
            ((got - expected) / expected).abs() < 1e-6,
            "{got} against {expected}"
        );
    }

    #[test]
    fn no_threads_or_repeats_measure_nothing() {
        assert_eq!(fma_peak_gflops(0, 3), None);
        assert_eq!(fma_peak_gflops(2, 0), None);
    }
}
