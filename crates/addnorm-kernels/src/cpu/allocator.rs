//! [`keep_freed_memory`]: tells glibc's `malloc` to keep freed memory for reuse instead of
//! handing it back to the OS, which a training loop on the CPU pays for at every step.
//!
//! A training step allocates and frees the same set of activation-sized buffers (a few
//! hundred KiB to a few MiB each) again and again. With glibc's defaults, a freed buffer
//! above the dynamic `mmap` threshold is unmapped, and free memory at the top of the heap
//! beyond 128 KiB is trimmed with `brk`; the next step's buffer of the same size then comes
//! back as fresh pages, and its first touch costs one page fault per 4 KiB plus the
//! kernel's zeroing. On a d_model 128, T 128 training step (issue 10's fourth model) that
//! was about a quarter of the step's time: `perf` put `exc_page_fault` at 13% inclusive,
//! and `brk`/`munmap` at 3% each.
//!
//! The two settings ([`MMAP_THRESHOLD`], [`TRIM_THRESHOLD`]) serve every allocation of up
//! to 32 MiB from the heap and never trim it, so after the first step every buffer is
//! reused memory. The cost is that the process keeps its peak heap until it exits, which is
//! what a training process needs anyway. The same PyTorch model's step time does not move
//! with these settings (`crates/addnorm-kernels/PERFORMANCE.md`, §6).
//!
//! It changes process-wide state, so the library never calls it by itself: the `addnorm`
//! binary and the benches call it first thing, and a user's own training binary may too.
//! On other C libraries than glibc it does nothing. Without it, the fused kernels' own
//! large outputs are still reused from one step to the next (`super::output_pool`); what
//! it adds is the same for Burn's ops (the residual adds, the gradient sums) and the
//! smaller buffers.
//!
//! # Formula
//! `mallopt(M_MMAP_THRESHOLD, 32 MiB)`, `mallopt(M_TRIM_THRESHOLD, 1 GiB)`: allocations
//! below 32 MiB never get their own mapping, and the heap is trimmed only above 1 GiB of
//! free memory at its top.
//!
//! # Shapes
//! None: process configuration.
//!
//! # Example
//! ```
//! // First thing in a training binary's `main`:
//! let applied = addnorm_kernels::cpu::allocator::keep_freed_memory();
//! assert_eq!(applied, cfg!(all(target_os = "linux", target_env = "gnu")));
//! ```

/// Allocations below this many bytes come from the heap (glibc's largest allowed value on
/// 64-bit targets: half of its 64 MiB heap size).
pub const MMAP_THRESHOLD: usize = 32 << 20;

/// The heap is trimmed only when this many bytes are free at its top.
pub const TRIM_THRESHOLD: usize = 1 << 30;

/// Applies the settings of the [module docs](self) to this process's `malloc`. Returns
/// whether they took effect: `false` on a C library other than glibc, or if glibc refused
/// one of them.
pub fn keep_freed_memory() -> bool {
    set_thresholds()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_thresholds() -> bool {
    // SAFETY: mallopt only changes malloc's tuning parameters; glibc takes its own lock,
    // and calls racing with other threads' allocations are allowed.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int) == 1
            && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD as libc::c_int) == 1
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_thresholds() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn glibc_accepts_both_settings_and_allocation_still_works() {
        assert!(keep_freed_memory());
        // A buffer above glibc's default threshold, freed and taken again.
        for round in 0..3 {
            let buffer = vec![round as u8; 8 << 20];
            assert!(buffer.iter().all(|&b| b == round as u8));
        }
    }
}
