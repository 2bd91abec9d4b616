//! Output buffers for the fused CPU kernels: their first element on a 64-byte boundary
//! ([`Aligned`]), backed by transparent huge pages where the OS offers them.
//!
//! Every output starts on a cache line, so that the next kernel's vector loads of it (a
//! GEMM's B, a norm's rows) and this kernel's stores each touch one line, not two (see
//! [`super::aligned`]).
//!
//! A fresh `[rows, n]` output of a few MiB comes from the allocator as untouched pages, and
//! the kernel's first write to each 4 KiB page takes a page fault. At 4096×1024 f32 that is
//! 4096 faults per output, which cost more than the kernel's arithmetic. Linux's
//! transparent huge pages in `madvise` mode (the default of many distributions) back a
//! region with 2 MiB pages when asked with `madvise(MADV_HUGEPAGE)`: 8 faults instead of
//! 4096. PyTorch's CPU allocator does the same (`THP_MEM_ALLOC_ENABLE`).
//!
//! The advice changes neither the contents nor the ownership of the buffer: it stays in a
//! plain `Vec` freed by the global allocator. Elsewhere than Linux, or when the kernel
//! refuses (THP off), nothing changes.
//!
//! With the `ndarray` feature, an output of at least `output_pool::MIN_BYTES` is first
//! looked for in the output pool (`super::output_pool`): the buffer of an earlier output of
//! the same length that Burn has dropped, its pages mapped already. Only when there is none
//! is a new buffer allocated and advised as above.
//!
//! # Formula
//! The advised range is the buffer's interior aligned to 2 MiB:
//! `[⌈start / 2 MiB⌉·2 MiB, ⌊end / 2 MiB⌋·2 MiB)`, and only for buffers of at least
//! [`HUGE_PAGE_MIN_BYTES`].
//!
//! The first element is at `⌈p / 64⌉·64` for the `Vec`'s pointer `p` ([`Aligned`]).
//!
//! # Shapes
//! A buffer of `len` elements, `len·size_of::<E>()` bytes.

use super::aligned::Aligned;
use super::real::Real;

/// The size of a transparent huge page on x86-64 and aarch64 Linux.
const HUGE_PAGE: usize = 2 << 20;

/// Buffers smaller than this are left alone: they hold at most one aligned huge page, and
/// small allocations are often reused from the allocator's free lists anyway.
pub const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;

/// A zeroed buffer of `len` elements for a kernel's output: a pooled one zeroed with a
/// `memset`, or a new one advised to use huge pages when it is large (see the
/// [module docs](self)), with every page written once.
///
/// A large zeroed allocation comes from the OS as untouched pages, all mapped to the
/// kernel's one shared zero page on a first *read*. A kernel that accumulates into the
/// buffer (attention's dK and dV, a GEMM with β = 1) reads each page before it writes it,
/// and so takes two faults per page: the read, then a copy-on-write fault, which in a
/// multi-threaded process also flushes the other threads' TLBs. In the d128/T128 training
/// step they were all of the step's read-first and copy-on-write faults (44 000 of each in
/// 14 steps, `perf record -e exceptions:page_fault_user`). Writing one zero per 4 KiB page
/// first leaves one plain fault per page. The stores are volatile: the compiler knows the
/// memory is zero already and would drop plain ones.
pub fn zeroed_output<E: Real>(len: usize) -> Aligned<E> {
    if let Some(mut buffer) = reused::<E>(len) {
        buffer.fill(E::ZERO);
        return buffer;
    }
    fresh_zeroed(len)
}

/// A buffer of `len` elements for an output that the kernel overwrites whole: a pooled one
/// as its last output left it (no `memset`), or a new one as [`zeroed_output`] makes it.
/// Every element holds a value either way, so this is safe; a kernel that left one
/// unwritten would return a stale value, which its tests rule out by running on a pooled
/// buffer of NaNs (`norm::ndarray`, `attention::ndarray`).
pub fn overwritten_output<E: Real>(len: usize) -> Aligned<E> {
    reused::<E>(len).unwrap_or_else(|| fresh_zeroed(len))
}

/// A new zeroed buffer, advised and with every page written once (see [`zeroed_output`]).
fn fresh_zeroed<E: Real>(len: usize) -> Aligned<E> {
    // Zeroed allocations of this size come straight from the OS as zero pages: no memset,
    // so the advice lands before the first touch.
    let mut buffer = Aligned::<E>::zeroed(len);
    lend_new(&buffer);
    advise_huge_pages(&buffer);
    let per_page = (4096 / size_of::<E>()).max(1);
    let ptr = buffer.as_mut_ptr();
    for i in (0..len).step_by(per_page) {
        // SAFETY: i < len, inside the buffer; the value written is the one already there.
        unsafe { std::ptr::write_volatile(ptr.add(i), E::ZERO) };
    }
    buffer
}

/// A buffer of `len` elements that `fill` writes whole through the pointer it is given,
/// with no zeroing first (a zeroed buffer from reused heap memory costs a `memset` over
/// it, 5% of a d128/T128 training step in the user's loop). Pooled or advised like
/// [`zeroed_output`].
///
/// # Safety
/// `fill` must write every one of the `len` elements (e.g. a GEMM with β = 0) before it
/// returns, and must not read an element it has not written.
pub unsafe fn written_output<E: Real>(len: usize, fill: impl FnOnce(*mut E)) -> Aligned<E> {
    if let Some(mut buffer) = reused::<E>(len) {
        fill(buffer.as_mut_ptr());
        return buffer;
    }
    // SAFETY: the caller's `fill` writes all `len` elements, after the pages are advised.
    let buffer = unsafe {
        Aligned::written(len, |ptr| {
            advise_range(ptr as usize, len * size_of::<E>());
            fill(ptr);
        })
    };
    lend_new(&buffer);
    buffer
}

/// A free buffer of `len` elements from the output pool (`super::output_pool`), whose
/// pages are mapped already; `None` without the `ndarray` feature.
fn reused<E: Real>(len: usize) -> Option<Aligned<E>> {
    #[cfg(feature = "ndarray")]
    return super::output_pool::take(len);
    #[cfg(not(feature = "ndarray"))]
    {
        let _ = len;
        None
    }
}

/// Tells the output pool that `buffer` was allocated for an output (nothing without the
/// `ndarray` feature).
fn lend_new<E: Real>(_buffer: &[E]) {
    #[cfg(feature = "ndarray")]
    super::output_pool::lend_new(_buffer);
}

#[cfg(target_os = "linux")]
fn advise_huge_pages<E>(buffer: &[E]) {
    advise_range(buffer.as_ptr() as usize, core::mem::size_of_val(buffer));
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages<E>(_buffer: &[E]) {}

/// Advises the 2 MiB-aligned interior of `[start, start + bytes)`, when it is large.
#[cfg(target_os = "linux")]
fn advise_range(start: usize, bytes: usize) {
    if bytes < HUGE_PAGE_MIN_BYTES {
        return;
    }
    let first = start.next_multiple_of(HUGE_PAGE);
    let end = (start + bytes) / HUGE_PAGE * HUGE_PAGE;
    if end > first {
        // SAFETY: [first, end) lies inside the caller's allocation, which this process owns. MADV_HUGEPAGE
        // is advice about how to back the pages; it changes no content and no mapping
        // rights, and a refusal (EINVAL when THP is off) leaves everything as it was.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_range(_start: usize, _bytes: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_zeroed_at_every_size() {
        for len in [0, 1, 1000, (HUGE_PAGE_MIN_BYTES / 4) + 12_345] {
            let buffer = zeroed_output::<f32>(len);
            assert_eq!(buffer.len(), len);
            assert!(buffer.iter().all(|&v| v == 0.0));
            // SAFETY: the closure writes all `len` elements.
            let written = unsafe {
                written_output::<f32>(len, |ptr| {
                    (0..len).for_each(|i| ptr.add(i).write(i as f32));
                })
            };
            assert!(written.iter().enumerate().all(|(i, &v)| v == i as f32));
        }
    }

    /// Every page of a zeroed output is resident (written once) before any kernel touches
    /// it, so that an accumulating kernel's first read does not map the shared zero page
    /// and then copy it on the write. 40 MiB is above glibc's largest mmap threshold, so
    /// the buffer is a fresh mapping of untouched pages, which `mincore` reports absent
    /// unless written.
    #[cfg(target_os = "linux")]
    #[test]
    fn zeroed_outputs_have_every_page_written() {
        const PAGE: usize = 4096;
        let len = (40 << 20) / 4;
        let buffer = zeroed_output::<f32>(len);
        let start = (buffer.as_ptr() as usize).next_multiple_of(PAGE);
        let end = (buffer.as_ptr() as usize + len * 4) / PAGE * PAGE;
        let mut resident = vec![0u8; (end - start) / PAGE];
        // SAFETY: [start, end) is page-aligned and inside the live buffer; `resident` has
        // one byte per page.
        let rc = unsafe {
            libc::mincore(
                start as *mut libc::c_void,
                end - start,
                resident.as_mut_ptr(),
            )
        };
        assert_eq!(rc, 0, "mincore failed");
        let absent = resident.iter().filter(|&&r| r & 1 == 0).count();
        assert_eq!(
            absent,
            0,
            "{absent} of {} pages never written",
            resident.len()
        );
        assert!(buffer.iter().all(|&v| v == 0.0));
    }
}
