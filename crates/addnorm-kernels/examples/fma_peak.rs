//! The machine's f32 FMA peak, measured by [`addnorm_kernels::cpu::peak`]: one thread alone
//! and `T` at once (default: every CPU), each on a loop of independent fused multiply-adds
//! and nothing else. This is the peak the training-step bench divides by (its `% peak`
//! column; kernels PERFORMANCE.md §28).
//!
//! ```text
//! cargo run --release -p addnorm-kernels --example fma_peak          # 1 and all threads
//! cargo run --release -p addnorm-kernels --example fma_peak -- 2     # 1 and 2 threads
//! ```

use addnorm_kernels::cpu::peak::{fma_lanes, fma_peak_gflops};

fn main() {
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads: usize = match std::env::args().nth(1) {
        None => all,
        Some(t) => t.parse().ok().filter(|&t| t > 0).unwrap_or_else(|| {
            eprintln!("fma_peak: the thread count is a positive integer, got {t:?}");
            std::process::exit(2)
        }),
    };
    let Some(lanes) = fma_lanes() else {
        eprintln!("fma_peak: this CPU has no x86-64 FMA");
        std::process::exit(2)
    };
    println!("f32 FMA peak, {}-bit vectors, the fastest of 7", lanes * 32);
    println!("{:>8} {:>12} {:>16}", "threads", "GFLOP/s", "per thread");
    for t in [1, threads] {
        let rate = fma_peak_gflops(t, 7).expect("threads and repeats are positive");
        println!("{t:>8} {rate:>12.1} {:>16.1}", rate / t as f64);
    }
}
