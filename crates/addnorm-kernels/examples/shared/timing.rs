//! What the kernel examples that time calls alone share (`attention_shapes`,
//! `gelu_shapes`, `linear_shapes`, `norm_shapes`): their `ROUNDS` option and header line,
//! the `COLD` option of those that cycle through copies of their operands, deterministic
//! operands on 64-byte lines (or `OFFSET` elements past them), a call's median time, or its fastest with `MIN` set, over a number of calls
//! after 5 unmeasured ones, and each call's best over the rounds.

use std::hint::black_box;
use std::time::Instant;

use addnorm_kernels::cpu::aligned::Aligned;

/// `len` deterministic values in [-1, 1), different for each `seed`, starting on a 64-byte
/// line as the kernels' outputs do (`addnorm_kernels::cpu::aligned`), or `OFFSET` elements
/// past one: `OFFSET=4` puts them 16 bytes in, where glibc's `malloc` starts a large `Vec`.
///
/// # Panics
/// If `OFFSET` is not a number below 16.
pub fn operand(len: usize, seed: usize) -> Aligned<f32> {
    let offset = std::env::var("OFFSET").map_or(0, |o| {
        o.parse().ok().filter(|&o| o < 16).expect("OFFSET: 0 to 15")
    });
    let (mut buffer, start, _) = Aligned::<f32>::zeroed(offset + len).into_parts();
    let values = &mut buffer[start + offset..start + offset + len];
    for (i, v) in values.iter_mut().enumerate() {
        *v = ((i * 7919 + seed * 104_729) % 2001) as f32 / 1000.0 - 1.0;
    }
    Aligned::from_parts(buffer, start + offset, len)
}

/// `COLD` (1 when unset): how many copies of their operands the calls cycle through.
///
/// # Panics
/// If `COLD` is not a positive number.
#[allow(
    dead_code,
    reason = "attention_shapes and linear_shapes read COLD; the others do not"
)]
pub fn cold_copies() -> usize {
    std::env::var("COLD").map_or(1, |n| n.parse().ok().filter(|&n| n > 0).expect("COLD"))
}

/// The median of `values` (the upper one of an even count).
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// `ROUNDS` (1 when unset), after printing the line that says how each cell is taken: the
/// threads, the rounds and [`statistic`].
///
/// # Panics
/// If `ROUNDS` is not a number.
pub fn announced_rounds() -> usize {
    let rounds = std::env::var("ROUNDS").map_or(1, |r| r.parse().expect("ROUNDS"));
    println!(
        "threads {}; each cell is the best of {rounds} rounds of a call's {}",
        rayon::current_num_threads(),
        statistic()
    );
    rounds
}

/// What [`time`] reports: `"fastest run"` with `MIN` set, else `"median"`.
fn statistic() -> &'static str {
    if std::env::var_os("MIN").is_some() {
        "fastest run"
    } else {
        "median"
    }
}

/// The seconds `f` takes: the median of `calls` runs after 5 unmeasured ones, or their
/// fastest when the environment variable `MIN` is set (a noisy host only adds time).
pub fn time<R>(calls: usize, mut f: impl FnMut() -> R) -> f64 {
    for _ in 0..5 {
        black_box(f());
    }
    let times: Vec<f64> = (0..calls)
        .map(|_| {
            let start = Instant::now();
            black_box(f());
            start.elapsed().as_secs_f64()
        })
        .collect();
    if std::env::var_os("MIN").is_some() {
        times.into_iter().fold(f64::INFINITY, f64::min)
    } else {
        median(times)
    }
}

/// Each of a round's `N` times at its best over `rounds` rounds of `round()`, which times
/// every call once (with [`time`]): the hosts are shared, and noise only adds time.
pub fn best_of<const N: usize>(rounds: usize, mut round: impl FnMut() -> [f64; N]) -> [f64; N] {
    let mut best = [f64::INFINITY; N];
    for _ in 0..rounds {
        for (best, t) in best.iter_mut().zip(round()) {
            *best = best.min(t);
        }
    }
    best
}
