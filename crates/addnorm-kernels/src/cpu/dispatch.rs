//! Run-time instruction-set dispatch for the CPU kernels' hot loops.
//!
//! The crate is built for baseline x86-64 (SSE2: 4 f32 lanes, no FMA, no SSE4.1), which is
//! what every user's build gets. The kernels' loops are written so that LLVM vectorizes
//! them; [`vectorized`] compiles such a loop a second and third time, for AVX2 + FMA
//! (8 lanes) and AVX-512F (16 lanes), and runs the widest copy the CPU supports. The
//! choice is made once per process ([`detected`]) and costs one relaxed atomic load per
//! call.
//!
//! The copies compute the same values, bit for bit: Rust never contracts `a·b + c` into an
//! FMA and never reorders float sums, so the lane structure of every reduction is the
//! one written in the source ([`super::real::LANES`]), whatever the register width.
//!
//! Memory-bound loops (LayerNorm, RMSNorm) gain little; arithmetic-bound ones gain most:
//! DyT's `tanh` (see `PERFORMANCE.md` of this crate for the measured figures).
//!
//! # Formula
//! `vectorized(f) = f()` compiled with the features of [`detected()`]:
//!
//! ```text
//! Avx512 → avx512f, avx2, fma       Avx2Fma → avx2, fma       Baseline → as built
//! ```
//!
//! # Shapes
//! None: `f` is the per-task body of a kernel (a block of rows), whatever its slices.
//!
//! # Example
//! ```
//! use addnorm_kernels::cpu::dispatch::{detected, vectorized};
//!
//! let x = [1.0_f32, 2.0, 3.0, 4.0];
//! let mut y = [0.0_f32; 4];
//! vectorized(
//!     #[inline(always)]
//!     || {
//!         for (y, x) in y.iter_mut().zip(&x) {
//!             *y = 2.0 * x;
//!         }
//!     },
//! );
//! assert_eq!(y, [2.0, 4.0, 6.0, 8.0]);
//! println!("the kernels run with {:?}", detected());
//! ```

use std::sync::atomic::{AtomicU8, Ordering};

/// The instruction sets [`vectorized`] compiles for, narrowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum InstructionSet {
    /// What the crate was built for (SSE2 on a default x86-64 build; any other target).
    Baseline,
    /// x86-64 AVX2 with FMA: 256-bit vectors.
    Avx2Fma,
    /// x86-64 AVX-512 Foundation (with AVX2 and FMA): 512-bit vectors.
    Avx512,
}

/// The cached answer of [`detected`]; [`UNKNOWN`] until the first call.
static DETECTED: AtomicU8 = AtomicU8::new(UNKNOWN);
const UNKNOWN: u8 = u8::MAX;

/// The widest [`InstructionSet`] this CPU supports, detected once per process.
///
/// Setting the environment variable `ADDNORM_CPU_DISPATCH=baseline` (or `avx2`) before the
/// first kernel call caps it, to compare the copies or to rule them out when debugging.
pub fn detected() -> InstructionSet {
    match DETECTED.load(Ordering::Relaxed) {
        UNKNOWN => {
            let set = detect().min(requested_cap());
            DETECTED.store(set as u8, Ordering::Relaxed);
            set
        }
        0 => InstructionSet::Baseline,
        1 => InstructionSet::Avx2Fma,
        _ => InstructionSet::Avx512,
    }
}

/// The cap `ADDNORM_CPU_DISPATCH` asks for, `Avx512` (no cap) when unset or unrecognized.
fn requested_cap() -> InstructionSet {
    match std::env::var("ADDNORM_CPU_DISPATCH").as_deref() {
        Ok("baseline") => InstructionSet::Baseline,
        Ok("avx2") => InstructionSet::Avx2Fma,
        _ => InstructionSet::Avx512,
    }
}

/// The widest [`InstructionSet`] the CPU has, whatever `ADDNORM_CPU_DISPATCH` caps
/// [`detected`] to (the direct GEMM's tests run on it, since other tests cap [`detected`]
/// for a moment).
#[cfg(target_arch = "x86_64")]
pub(crate) fn detect() -> InstructionSet {
    if std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
    {
        InstructionSet::Avx512
    } else if std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
    {
        InstructionSet::Avx2Fma
    } else {
        InstructionSet::Baseline
    }
}

/// The widest [`InstructionSet`] the CPU has, whatever `ADDNORM_CPU_DISPATCH` caps
/// [`detected`] to (the direct GEMM's tests run on it, since other tests cap [`detected`]
/// for a moment).
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn detect() -> InstructionSet {
    InstructionSet::Baseline
}

/// Runs `f`, compiled for the widest instruction set of [`detected`].
///
/// `f` and everything it calls must be inlined into each copy for the wider copies to be
/// vectorized wider: the kernels' row functions and [`super::real::Real`] methods are
/// `#[inline(always)]`, and so must the closure passed as `f` be (`vectorized(#[inline(always)]
/// || ..)`). Without that attribute LLVM compiled each copy as a jump to the one baseline
/// closure body (seen in the disassembly), and nothing ran wider.
#[inline(always)]
pub fn vectorized<R>(f: impl FnOnce() -> R) -> R {
    match detected() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `detected` returned Avx512 only after the CPU reported avx512f, avx2 and
        // fma.
        InstructionSet::Avx512 => unsafe { x86::with_avx512(f) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `detected` returned Avx2Fma only after the CPU reported avx2 and fma.
        InstructionSet::Avx2Fma => unsafe { x86::with_avx2_fma(f) },
        _ => f(),
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    /// `f()` with AVX-512F, AVX2 and FMA enabled for the code inlined into it.
    #[target_feature(enable = "avx512f,avx2,fma")]
    pub(super) fn with_avx512<R>(f: impl FnOnce() -> R) -> R {
        f()
    }

    /// `f()` with AVX2 and FMA enabled for the code inlined into it.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn with_avx2_fma<R>(f: impl FnOnce() -> R) -> R {
        f()
    }
}

/// Runs `run` once under each instruction set this CPU supports, narrowest first, with
/// [`detected`] forced to it, and returns what each run gave: the tests of the ops' kernels
/// check with it that every copy computes the same bits.
///
/// Other tests may run kernels meanwhile under the forced set: harmless, since every set
/// the CPU supports computes the same bits (what those tests check).
#[cfg(test)]
pub(crate) fn under_every_instruction_set<R>(
    mut run: impl FnMut() -> R,
) -> Vec<(InstructionSet, R)> {
    let detected_set = detected();
    let mut results = Vec::new();
    for set in tests::supported() {
        DETECTED.store(set as u8, Ordering::Relaxed);
        results.push((set, run()));
    }
    DETECTED.store(detected_set as u8, Ordering::Relaxed);
    results
}

/// Asserts that every run of [`under_every_instruction_set`] gave the baseline copy's bits
/// (compared by `to_bits`, so ±0 and NaN payloads count); `floats` lists a run's outputs.
#[cfg(test)]
pub(crate) fn assert_every_copy_gives_the_baseline_bits<R>(
    results: &[(InstructionSet, R)],
    floats: impl Fn(&R) -> Vec<f32>,
) {
    let bits = |run: &R| {
        floats(run)
            .iter()
            .map(|v| v.to_bits())
            .collect::<Vec<u32>>()
    };
    let baseline = bits(&results[0].1);
    for (set, run) in &results[1..] {
        assert!(
            bits(run) == baseline,
            "{set:?} differs from the baseline copy"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_is_cached_and_within_what_the_cpu_has() {
        // Not `detected() == detected()`: the kernels' tests force each set in turn
        // (`under_every_instruction_set`).
        assert!(detected() <= detect());
        assert_ne!(DETECTED.load(Ordering::Relaxed), UNKNOWN);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_copy_computes_the_same_bits() {
        // A lane-wise reduction and a division-heavy map, as in the kernels.
        let x: Vec<f32> = (0..1000).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
        let body = || {
            let y: Vec<f32> = x
                .iter()
                .map(|&v| crate::cpu::tanh::tanh_f32(v) / (1.0 + v * v))
                .collect();
            let total = super::super::real::sum_map(&y, |v| v);
            (y, total)
        };
        let baseline = body();
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the features were just detected.
            assert_eq!(unsafe { x86::with_avx2_fma(body) }, baseline);
        }
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the features were just detected.
            assert_eq!(unsafe { x86::with_avx512(body) }, baseline);
        }
    }

    /// The instruction sets this CPU can run, narrowest first.
    pub(crate) fn supported() -> Vec<InstructionSet> {
        [
            InstructionSet::Baseline,
            InstructionSet::Avx2Fma,
            InstructionSet::Avx512,
        ]
        .into_iter()
        .filter(|&set| set <= detect())
        .collect()
    }
}
