//! addnorm's fused CPU norms against `burn::nn::LayerNorm` / `burn::nn::RmsNorm`, on
//! `Autodiff<NdArray<f32>>`, forward + backward.
//!
//! ```text
//! cargo bench --bench norm_kernels --features ndarray
//! ```
//!
//! Each measurement is one training-style step: `y = norm(x)`, `loss = Σ y·dy`,
//! `loss.backward()`, with `x` requiring a gradient (so dx, dγ and dβ are all computed).
//! The table reports, per norm and shape, the median over the repetitions, the speed-up
//! over Burn's module, and the achieved bandwidth counting 8 bytes per element for the
//! forward (read x, write y) and 12 for the backward (read x and dy, write dx), as a
//! fraction of the copy bandwidth measured in the same run on as many threads as the
//! kernels use. "loss only" times the same step with no norm (`y = x`): the loss's multiply
//! and sum, their backward and the autodiff graph, a floor under both norms; "norm only" is
//! addnorm's time less that floor, to set beside the same column of
//! `benches/torch_norms.py`. The "kernel" columns time the fused forward and
//! backward kernels alone on slices, without the autodiff graph and the loss's own
//! element-wise ops: as the NdArray glue runs them (a fresh `y`, dx over a uniquely owned
//! dy), and on warm buffers whose pages are mapped already (as in the copy loop).
//!
//! The GroupNorm table (issue 27) times `addnorm::nn::GroupNorm` / `InstanceNorm` on
//! `[N, C, H, W]` against `burn::nn::GroupNorm` / `InstanceNorm`, the composite path and
//! PyTorch's CPU `nn.GroupNorm` (`benches/torch_group_norm.py`, run as a child process
//! with the same thread count by `$ADDNORM_PYTHON`, default `python3`; skipped, saying so,
//! without torch).
//!
//! `-- --group-only` runs that table alone.
//!
//! `--rss` additionally runs one step at 4096×1024 per implementation in a child process
//! and reports its peak resident memory (VmHWM).
//!
//! With `--features wgpu`, `-- --wgpu` times the same steps on `Autodiff<Wgpu<f32>>` (Burn's
//! default wgpu type, with fusion) instead: addnorm's CubeCL kernels against Burn's
//! modules, each step ending with a device sync. On Mesa's software driver the numbers say
//! nothing about a GPU; run it on a real one.
//!
//! ```text
//! cargo bench --bench norm_kernels --features wgpu -- --wgpu
//! cargo bench --bench norm_kernels --features wgpu -- --wgpu --reps 1   # a smoke run
//! ```
//!
//! With `--features cuda`, `-- --cuda` runs the same GPU tables on `Autodiff<Cuda<f32>>`.
//! Both GPU tables add the GroupNorm rows and, where `python3` has torch with CUDA, PyTorch's
//! time for each row on the GPU (`benches/torch_gpu.py norms`).

#[path = "common/gpu.rs"]
mod gpu;

use std::cell::RefCell;
use std::hint::black_box;
use std::time::{Duration, Instant};

use addnorm::nn::{Affine, LayerNormConfig, RmsNormConfig};
use addnorm_kernels::NormAutodiffBackend;
use addnorm_kernels::RowNormSpec;
use addnorm_kernels::cpu::memory::zeroed_output;
use addnorm_kernels::norm::cpu::{backward::backward_in_place, forward::forward, plan::RowPlan};
use burn::backend::{Autodiff, NdArray};
use burn::tensor::{Distribution, Tensor};
use rayon::prelude::*;

type Ad = Autodiff<NdArray<f32>>;

/// Bytes moved per element by one forward + backward of the norm itself.
const BYTES_PER_ELEMENT: f64 = 8.0 + 12.0;

/// The shapes of the issue, as `(label, leading dims, n)`, and (since §17) 512- and
/// 64-wide rows, on both sides of the CubeCL plane kernels' bounds.
const SHAPES: [(&str, &[usize], usize); 6] = [
    ("4096×1024", &[4096], 1024),
    ("8192×512", &[8192], 512),
    ("65536×64", &[65536], 64),
    ("16384×256", &[16384], 256),
    ("64×8192", &[64], 8192),
    ("8×32×768", &[8, 32], 768),
];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Layer,
    Rms,
    /// RMSNorm with Gemma's unit-offset gain `1 + γ` (issue 27): the same kernel, the gain
    /// formed once per call; beside Burn's plain RmsNorm.
    RmsUnitOffset,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Implementation {
    Addnorm,
    Burn,
    /// No norm at all (`y = x`): what the step's own ops cost (the loss's multiply and sum,
    /// their backward, the autodiff graph). Neither norm can take less.
    LossOnly,
}

/// The norm of [`Implementation::LossOnly`].
struct Identity;

impl Identity {
    fn forward<B: burn::tensor::backend::Backend, const D: usize>(
        &self,
        x: Tensor<B, D>,
    ) -> Tensor<B, D> {
        x
    }
}

/// The median of `reps` timings of `step` after `warmup` untimed calls.
fn median(warmup: usize, reps: usize, mut step: impl FnMut()) -> Duration {
    median_with_setup(warmup, reps, || (), |()| step())
}

/// [`median`] with an untimed `setup` before each call, whose result `step` consumes.
fn median_with_setup<S>(
    warmup: usize,
    reps: usize,
    mut setup: impl FnMut() -> S,
    mut step: impl FnMut(S),
) -> Duration {
    for _ in 0..warmup {
        step(setup());
    }
    let mut times: Vec<Duration> = (0..reps)
        .map(|_| {
            let state = setup();
            let start = Instant::now();
            step(state);
            start.elapsed()
        })
        .collect();
    times.sort();
    times[reps / 2]
}

/// Repetitions so that one measurement takes about a second, at least 5.
fn repetitions(elements: usize) -> usize {
    (200_000_000 / elements.max(1)).clamp(5, 51) | 1
}

/// One forward + backward step of `kind` from `implementation` on `[lead.., n]`, on
/// backend `B`, ending with a device sync (a no-op on the CPU).
fn step_fn<B: NormAutodiffBackend, const D: usize>(
    kind: Kind,
    implementation: Implementation,
    shape: [usize; D],
) -> Box<dyn FnMut()> {
    let device = B::Device::default();
    let n = shape[D - 1];
    let x = Tensor::<B, D>::random(shape, Distribution::Normal(0.5, 2.0), &device);
    let dy = Tensor::<B, D>::random(shape, Distribution::Normal(0.0, 1.0), &device);
    macro_rules! step {
        ($norm:expr) => {{
            let norm = $norm;
            Box::new(move || {
                let x = x.clone().require_grad();
                let y = norm.forward(x.clone());
                let grads = (y * dy.clone()).sum().backward();
                black_box(x.grad(&grads));
                B::sync(&device).expect("device sync");
            })
        }};
    }
    match (kind, implementation) {
        (Kind::Layer, Implementation::Addnorm) => {
            step!(LayerNormConfig::new(vec![n]).init::<B>(&device))
        }
        (Kind::Rms, Implementation::Addnorm) => {
            step!(RmsNormConfig::new(vec![n]).init::<B>(&device))
        }
        (Kind::Layer, Implementation::Burn) => {
            step!(burn::nn::LayerNormConfig::new(n).init::<B>(&device))
        }
        (Kind::RmsUnitOffset, Implementation::Addnorm) => step!(
            RmsNormConfig::new(vec![n])
                .with_affine(Affine::UnitOffset)
                .init::<B>(&device)
        ),
        (Kind::Rms | Kind::RmsUnitOffset, Implementation::Burn) => {
            step!(burn::nn::RmsNormConfig::new(n).init::<B>(&device))
        }
        (_, Implementation::LossOnly) => step!(Identity),
    }
}

/// The median steps of Burn's module, addnorm's and the loss alone (in that order, each
/// after `warmup` unrecorded steps) for one norm and shape: what both the CPU and the GPU
/// tables put side by side.
fn step_times<B: NormAutodiffBackend>(
    kind: Kind,
    lead: &[usize],
    n: usize,
    (warmup, reps): (usize, usize),
) -> [Duration; 3] {
    [
        Implementation::Burn,
        Implementation::Addnorm,
        Implementation::LossOnly,
    ]
    .map(|implementation| median(warmup, reps, step_for::<B>(kind, implementation, lead, n)))
}

fn step_for<B: NormAutodiffBackend>(
    kind: Kind,
    implementation: Implementation,
    lead: &[usize],
    n: usize,
) -> Box<dyn FnMut()> {
    match *lead {
        [rows] => step_fn::<B, 2>(kind, implementation, [rows, n]),
        [a, b] => step_fn::<B, 3>(kind, implementation, [a, b, n]),
        _ => unreachable!("the bench shapes have rank 2 or 3"),
    }
}

/// The fused kernels alone, forward then backward on slices: `(as run, warm)`.
///
/// "As run" is how the NdArray glue runs them under autodiff: `y` in a fresh output buffer
/// (page faults included), dx written over a uniquely owned dy, both freed at the end.
/// "Warm" reuses buffers whose pages are mapped already, as the copy-bandwidth loop does:
/// the kernels' own arithmetic and traffic. The copy of dy that the backward overwrites is
/// made in the untimed setup of both.
fn kernel_times(kind: Kind, rows: usize, n: usize, reps: usize) -> (Duration, Duration) {
    let spec = match kind {
        Kind::Layer => RowNormSpec::layer_norm(1e-5),
        Kind::Rms | Kind::RmsUnitOffset => RowNormSpec::rms_norm(1e-6),
    };
    let plan = RowPlan::<f32>::new(&spec, n);
    let x: Vec<f32> = (0..rows * n)
        .map(|i| ((i * 7919) % 1013) as f32 * 1e-3)
        .collect();
    let dy: Vec<f32> = (0..rows * n)
        .map(|i| ((i * 104729) % 997) as f32 * 1e-3)
        .collect();
    let (gamma, beta) = (vec![1.0_f32; n], vec![0.0_f32; n]);
    let as_run = median_with_setup(
        2,
        reps,
        || dy.clone(),
        |mut grad| {
            let mut y = zeroed_output::<f32>(rows * n);
            let mut shift = vec![0.0_f32; rows];
            let mut rstd = vec![0.0_f32; rows];
            forward(&plan, &x, &gamma, &beta, &mut y, &mut shift, &mut rstd);
            let grads = backward_in_place(&plan, &x, &mut grad, &gamma, &shift, &rstd);
            black_box((y, grad, grads));
        },
    );
    let (mut y, grad) = (
        vec![0.0_f32; rows * n],
        RefCell::new(vec![0.0_f32; rows * n]),
    );
    let (mut shift, mut rstd) = (vec![0.0_f32; rows], vec![0.0_f32; rows]);
    let warm = median_with_setup(
        2,
        reps,
        || grad.borrow_mut().copy_from_slice(&dy),
        |()| {
            let mut grad = grad.borrow_mut();
            forward(&plan, &x, &gamma, &beta, &mut y, &mut shift, &mut rstd);
            let grads = backward_in_place(&plan, &x, &mut grad, &gamma, &shift, &rstd);
            black_box((&y, &grad, grads));
        },
    );
    (as_run, warm)
}

/// Read + write bandwidth of a large copy, in GB/s: `(one thread, every rayon thread)`.
/// The kernels run on every rayon thread, so the second is their denominator.
fn copy_bandwidth() -> (f64, f64) {
    let len = 64 << 20; // 256 MiB of f32, well beyond the caches
    let source = vec![1.0_f32; len];
    let mut target = vec![0.0_f32; len];
    let single = median(1, 7, || {
        target.copy_from_slice(black_box(&source));
        black_box(&mut target);
    });
    let parallel = median(1, 7, || {
        target
            .par_chunks_mut(1 << 16)
            .zip(black_box(&source).par_chunks(1 << 16))
            .for_each(|(target, source)| target.copy_from_slice(source));
        black_box(&mut target);
    });
    let gbps = |time: Duration| 2.0 * (len * 4) as f64 / time.as_secs_f64() / 1e9;
    (gbps(single), gbps(parallel))
}

fn gbps(elements: usize, time: Duration) -> f64 {
    BYTES_PER_ELEMENT * elements as f64 / time.as_secs_f64() / 1e9
}

/// The child process of `--rss`: one step, then the peak resident memory.
fn peak_rss_child(kind: Kind, implementation: Implementation) {
    let rss = |field: &str| -> usize {
        let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("a kB field")
    };
    let mut step = step_for::<Ad>(kind, implementation, &[4096], 1024);
    let baseline = rss("VmRSS:");
    step();
    println!("{baseline} {}", rss("VmHWM:"));
}

fn peak_rss_report() {
    println!("\nPeak resident memory of one forward + backward at 4096×1024 (f32 x is 16 MiB):");
    println!(
        "{:<8} {:<22} {:>14} {:>14} {:>14}",
        "norm", "implementation", "inputs (MiB)", "peak (MiB)", "step (MiB)"
    );
    for kind in [Kind::Layer, Kind::Rms] {
        for implementation in [Implementation::Addnorm, Implementation::Burn] {
            let output = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--rss-child",
                    &format!("{kind:?}"),
                    &format!("{implementation:?}"),
                ])
                .output()
                .expect("run the child");
            let text = String::from_utf8_lossy(&output.stdout);
            let fields: Vec<f64> = text
                .split_whitespace()
                .filter_map(|v| v.parse().ok())
                .collect();
            let [baseline, peak] = fields[..] else {
                panic!("child printed {text:?}");
            };
            println!(
                "{:<8} {:<22} {:>14.1} {:>14.1} {:>14.1}",
                format!("{kind:?}"),
                name(implementation),
                baseline / 1024.0,
                peak / 1024.0,
                (peak - baseline) / 1024.0
            );
        }
    }
}

fn name(implementation: Implementation) -> &'static str {
    match implementation {
        Implementation::Addnorm => "addnorm (fused)",
        Implementation::Burn => "burn::nn",
        Implementation::LossOnly => "loss only",
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--rss-child") {
        let kind = if args[i + 1] == "Layer" {
            Kind::Layer
        } else {
            Kind::Rms
        };
        let implementation = if args[i + 2] == "Addnorm" {
            Implementation::Addnorm
        } else {
            Implementation::Burn
        };
        peak_rss_child(kind, implementation);
        return;
    }

    if args.iter().any(|a| a == "--wgpu" || a == "--cuda") {
        // `--reps N` caps the repetitions (a smoke run on a software driver: `--reps 1`).
        let cap = args
            .iter()
            .position(|a| a == "--reps")
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(usize::MAX);
        gpu::on_gpu_backend!(
            args.iter().any(|a| a == "--cuda"),
            "norm_kernels",
            gpu_table(cap)
        );
        return;
    }

    let (single_copy, copy) = copy_bandwidth();
    if args.iter().any(|a| a == "--group-only") {
        println!("copy bandwidth (read + write): {copy:.1} GB/s");
        group_norm_table(copy);
        return;
    }
    let threads = rayon::current_num_threads();
    println!(
        "Autodiff<NdArray<f32>>, forward + backward of y = norm(x), loss = Σ y·dy; \
         {threads} rayon threads; CPU kernels compiled for {:?}",
        addnorm_kernels::cpu::dispatch::detected()
    );
    println!(
        "copy bandwidth (read + write): {copy:.1} GB/s on {threads} threads, \
         {single_copy:.1} GB/s on one"
    );
    println!(
        "GB/s counts {BYTES_PER_ELEMENT} bytes per element (forward 8, backward 12); \
         % copy = that bandwidth over the {threads}-thread copy bandwidth; \
         norm only = addnorm − loss only; kernel: the fused kernels alone, as run \
         (fresh y, freed after) and on warm buffers.\n"
    );
    println!(
        "{:<13} {:<10} {:>12} {:>12} {:>9} {:>8} {:>7} {:>12} {:>12} {:>12} {:>7} {:>12} {:>7}",
        "norm",
        "shape",
        "burn::nn",
        "addnorm",
        "speed-up",
        "GB/s",
        "% copy",
        "loss only",
        "norm only",
        "kernel",
        "% copy",
        "warm kernel",
        "% copy"
    );
    for kind in [Kind::Layer, Kind::Rms, Kind::RmsUnitOffset] {
        for (label, lead, n) in SHAPES {
            let rows: usize = lead.iter().product();
            let elements = rows * n;
            let reps = repetitions(elements);
            let [burn_time, ours, loss_only] = step_times::<Ad>(kind, lead, n, (2, reps));
            let (kernel, warm) = kernel_times(kind, rows, n, reps);
            println!(
                "{:<13} {:<10} {:>9.2} ms {:>9.2} ms {:>8.1}× {:>8.1} {:>6.0}% {:>9.2} ms {:>9.2} ms {:>9.2} ms {:>6.0}% {:>9.2} ms {:>6.0}%",
                format!("{kind:?}"),
                label,
                burn_time.as_secs_f64() * 1e3,
                ours.as_secs_f64() * 1e3,
                burn_time.as_secs_f64() / ours.as_secs_f64(),
                gbps(elements, ours),
                100.0 * gbps(elements, ours) / copy,
                loss_only.as_secs_f64() * 1e3,
                (ours.as_secs_f64() - loss_only.as_secs_f64()) * 1e3,
                kernel.as_secs_f64() * 1e3,
                100.0 * gbps(elements, kernel) / copy,
                warm.as_secs_f64() * 1e3,
                100.0 * gbps(elements, warm) / copy,
            );
        }
    }
    dynamic_tanh_table();
    group_norm_table(copy);
    if args.iter().any(|a| a == "--rss") {
        peak_rss_report();
    }
}

/// One DyT forward + backward step on `[rows, n]`, fused or (under `ForceComposite`) as
/// Burn ops.
fn dynamic_tanh_step(rows: usize, n: usize, composite: bool) -> impl FnMut() {
    let device = Default::default();
    let x = Tensor::<Ad, 2>::random([rows, n], Distribution::Normal(0.5, 2.0), &device);
    let dy = Tensor::<Ad, 2>::random([rows, n], Distribution::Normal(0.0, 1.0), &device);
    let dyt = addnorm::nn::DynamicTanhConfig::new(vec![n]).init::<Ad>(&device);
    move || {
        let _guard = composite.then(addnorm_kernels::composite::ForceComposite::new);
        let x = x.clone().require_grad();
        let grads = (dyt.forward(x.clone()) * dy.clone()).sum().backward();
        black_box(x.grad(&grads));
    }
}

/// DyT: the fused CPU kernels against the composite path (Burn has no DyT module).
fn dynamic_tanh_table() {
    println!("\nDynamicTanh, forward + backward, fused vs composite (Burn ops):");
    println!(
        "{:<10} {:>12} {:>12} {:>9}",
        "shape", "composite", "fused", "speed-up"
    );
    for (label, lead, n) in SHAPES {
        let rows: usize = lead.iter().product();
        let reps = repetitions(rows * n);
        let composite = median(2, reps, dynamic_tanh_step(rows, n, true));
        let fused = median(2, reps, dynamic_tanh_step(rows, n, false));
        println!(
            "{:<10} {:>9.2} ms {:>9.2} ms {:>8.1}×",
            label,
            composite.as_secs_f64() * 1e3,
            fused.as_secs_f64() * 1e3,
            composite.as_secs_f64() / fused.as_secs_f64(),
        );
    }
}

/// The GPU tables on autodiff backend `B`: LayerNorm, RMSNorm and Gemma's unit-offset
/// RMSNorm against Burn's modules, with the step's own floor (loss only: `y = x`, the loss,
/// its backward and the sync), then GroupNorm / InstanceNorm (fused, composite, Burn's
/// modules), with PyTorch's CUDA time beside each row when it runs here.
#[cfg_attr(not(any(feature = "wgpu", feature = "cuda")), allow(dead_code))]
fn gpu_table<B: NormAutodiffBackend>(device: &B::Device, max_reps: usize) {
    let adapter = B::name(device);
    let torch = gpu::torch_times("norms");
    let torch_cell = |label: &str| {
        gpu::torch_ms(&torch, label).map_or("-".to_string(), |ms| format!("{ms:.3} ms"))
    };
    println!(
        "{adapter}, forward + backward of y = norm(x), loss = Σ y·dy, synced after each \
         step; GB/s counts {BYTES_PER_ELEMENT} bytes per element; torch: the same step in \
         PyTorch on CUDA (benches/torch_gpu.py), run first.\n"
    );
    println!(
        "{:<13} {:<10} {:>12} {:>12} {:>9} {:>8} {:>12} {:>12} {:>12}",
        "norm",
        "shape",
        "burn::nn",
        "addnorm",
        "speed-up",
        "GB/s",
        "loss only",
        "torch",
        "torch floor"
    );
    for kind in [Kind::Layer, Kind::Rms, Kind::RmsUnitOffset] {
        for (label, lead, n) in SHAPES {
            let elements = lead.iter().product::<usize>() * n;
            let reps = repetitions(elements).min(max_reps.max(1));
            let [burn_time, ours, floor] = step_times::<B>(kind, lead, n, (reps.min(3), reps));
            let torch_label = match kind {
                Kind::Layer => format!("Layer {label}"),
                Kind::Rms => format!("Rms {label}"),
                Kind::RmsUnitOffset => String::new(),
            };
            println!(
                "{:<13} {:<10} {:>9.3} ms {:>9.3} ms {:>8.2}× {:>8.1} {:>9.3} ms {:>12} {:>12}",
                format!("{kind:?}"),
                label,
                burn_time.as_secs_f64() * 1e3,
                ours.as_secs_f64() * 1e3,
                burn_time.as_secs_f64() / ours.as_secs_f64(),
                gbps(elements, ours),
                floor.as_secs_f64() * 1e3,
                torch_cell(&torch_label),
                torch_cell(&format!("Loss {label}")),
            );
        }
    }
    println!(
        "\n{:<20} {:<15} {:>12} {:>12} {:>12} {:>12} {:>9}",
        "norm", "shape", "burn::nn", "composite", "addnorm", "torch", "÷ burn"
    );
    for (label, shape, groups) in GROUP_CASES {
        let reps = repetitions(shape.iter().product()).min(max_reps.max(1));
        let time = |implementation| {
            median(
                reps.min(3),
                reps,
                group_norm_step::<B>(shape, groups, implementation, device),
            )
            .as_secs_f64()
                * 1e3
        };
        let (burn_ms, composite, ours) = (
            time(GroupImplementation::Burn),
            time(GroupImplementation::Composite),
            time(GroupImplementation::Fused),
        );
        println!(
            "{:<20} {:<15} {:>9.3} ms {:>9.3} ms {:>9.3} ms {:>12} {:>8.2}×",
            label,
            format!("{shape:?}"),
            burn_ms,
            composite,
            ours,
            torch_cell(label),
            burn_ms / ours,
        );
    }
}

/// The GroupNorm table's cases: label, `[N, C, H, W]`, groups (C for InstanceNorm).
const GROUP_CASES: [(&str, [usize; 4], usize); 3] = [
    ("GroupNorm 32 groups", [32, 64, 32, 32], 32),
    ("InstanceNorm", [32, 64, 32, 32], 64),
    ("GroupNorm 8 groups", [8, 256, 16, 16], 8),
];

/// Which GroupNorm a step runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum GroupImplementation {
    /// `addnorm::nn::GroupNorm` / `InstanceNorm`, fused.
    Fused,
    /// The same module under `ForceComposite`.
    Composite,
    /// `burn::nn::GroupNorm` / `InstanceNorm`.
    Burn,
    /// No norm (`y = x`): the step's own loss and graph, the floor under every row.
    LossOnly,
}

/// One forward + backward step of a GroupNorm case.
fn group_norm_step<B: NormAutodiffBackend>(
    shape: [usize; 4],
    groups: usize,
    implementation: GroupImplementation,
    device: &B::Device,
) -> impl FnMut() {
    let device = device.clone();
    let x = Tensor::<B, 4>::random(shape, Distribution::Normal(0.5, 2.0), &device);
    let dy = Tensor::<B, 4>::random(shape, Distribution::Normal(0.0, 1.0), &device);
    let channels = shape[1];
    let ours = addnorm::nn::GroupNormConfig::new(groups, channels).init::<B>(&device);
    let burn_group = burn::nn::GroupNormConfig::new(groups, channels).init::<B>(&device);
    let burn_instance = burn::nn::InstanceNormConfig::new(channels).init::<B>(&device);
    move || {
        let _guard = (implementation == GroupImplementation::Composite)
            .then(addnorm_kernels::composite::ForceComposite::new);
        let x = x.clone().require_grad();
        let y = match implementation {
            GroupImplementation::Burn if groups == channels => burn_instance.forward(x.clone()),
            GroupImplementation::Burn => burn_group.forward(x.clone()),
            GroupImplementation::LossOnly => x.clone(),
            _ => ours.forward(x.clone()),
        };
        let grads = (y * dy.clone()).sum().backward();
        black_box(x.grad(&grads));
        B::sync(&device).expect("device sync");
    }
}

/// The fused GroupNorm kernels alone on slices, as the `NdArray` glue runs them in a step:
/// the forward into a fresh `y`, the backward over dy in place (a copy of dy made before
/// each timing, untimed).
fn group_kernel_time(shape: [usize; 4], groups: usize, reps: usize) -> Duration {
    use addnorm_kernels::group_norm::{GroupDims, GroupNormSpec, cpu};
    let spec = GroupNormSpec {
        groups,
        epsilon: 1e-5,
    };
    let [n, c, h, w] = shape;
    let dims = GroupDims::new(&shape, &spec);
    let elements = n * c * h * w;
    let x: Vec<f32> = (0..elements)
        .map(|i| ((i * 7919) % 1000) as f32 / 250.0)
        .collect();
    let dy: Vec<f32> = (0..elements)
        .map(|i| ((i * 104_729) % 997) as f32 / 500.0)
        .collect();
    let (gamma, beta) = (vec![1.0_f32; c], vec![0.0_f32; c]);
    median_with_setup(
        2,
        reps,
        || dy.clone(),
        |mut grad| {
            let (y, (shift, rstd)) = cpu::forward(dims, &x, &gamma, &beta, 1e-5);
            black_box(&y);
            black_box(cpu::backward_in_place(
                dims,
                &x,
                &gamma,
                (&shift, &rstd),
                &mut grad,
            ));
        },
    )
}

/// PyTorch's `(step, loss-only)` milliseconds for [`GROUP_CASES`], by label, from
/// `benches/torch_group_norm.py`; empty (with a note) when Python or torch is missing.
fn torch_group_times() -> Vec<(String, [f64; 2])> {
    let python = std::env::var("ADDNORM_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/torch_group_norm.py");
    let output = std::process::Command::new(&python)
        .arg(script)
        .arg(rayon::current_num_threads().to_string())
        .output();
    match output {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let mut fields = l.split('\t');
                let label = fields.next()?.to_string();
                let step = fields.next()?.trim().parse().ok()?;
                let floor = fields.next()?.trim().parse().ok()?;
                Some((label, [step, floor]))
            })
            .collect(),
        _ => {
            println!("(torch: {python} with torch is not available; its column is empty)");
            vec![]
        }
    }
}

/// GroupNorm and InstanceNorm: addnorm (fused and composite) against Burn's modules and
/// PyTorch, forward + backward (issue 27's targets: ≥ 5× Burn, no slower than torch). "norm
/// only" is each step less its own harness's loss-only step (Burn's for the Rust rows,
/// torch's for torch), as in the LayerNorm table; "kernel" the fused kernels alone, with
/// its bandwidth (20 bytes per element) over the copy bandwidth.
fn group_norm_table(copy: f64) {
    println!(
        "\nGroupNorm / InstanceNorm on [N, C, H, W], forward + backward; steps, then norm only \
         (the step less its harness's loss-only step); torch: the same in PyTorch, same \
         threads, run first:"
    );
    let torch = torch_group_times();
    println!(
        "{:<20} {:<15} {:>10} {:>10} {:>10} {:>10} {:>10} | {:>10} {:>10} {:>10} {:>8} {:>8} | {:>10} {:>6}",
        "norm",
        "shape",
        "burn::nn",
        "composite",
        "addnorm",
        "torch",
        "loss only",
        "burn::nn",
        "addnorm",
        "torch",
        "÷ burn",
        "torch ÷",
        "kernel",
        "% copy"
    );
    for (label, shape, groups) in GROUP_CASES {
        let elements: usize = shape.iter().product();
        let reps = repetitions(elements);
        let time = |implementation| {
            median(
                2,
                reps,
                group_norm_step::<Ad>(shape, groups, implementation, &Default::default()),
            )
            .as_secs_f64()
                * 1e3
        };
        let burn_ms = time(GroupImplementation::Burn);
        let composite = time(GroupImplementation::Composite);
        let ours = time(GroupImplementation::Fused);
        let floor = time(GroupImplementation::LossOnly);
        let kernel = group_kernel_time(shape, groups, reps);
        let torch_ms = torch.iter().find(|(l, _)| l == label).map(|(_, t)| *t);
        let (burn_norm, our_norm) = (burn_ms - floor, ours - floor);
        let torch_norm = torch_ms.map(|[step, floor]| step - floor);
        let cell = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2} ms"));
        println!(
            "{:<20} {:<15} {:>7.2} ms {:>7.2} ms {:>7.2} ms {:>10} {:>7.2} ms | {:>7.2} ms {:>7.2} ms {:>10} {:>7.1}× {:>8} | {:>7.2} ms {:>5.0}%",
            label,
            format!("{shape:?}"),
            burn_ms,
            composite,
            ours,
            cell(torch_ms.map(|t| t[0])),
            floor,
            burn_norm,
            our_norm,
            cell(torch_norm),
            burn_norm / our_norm,
            torch_norm.map_or("-".into(), |t| format!("{:.2}×", t / our_norm)),
            kernel.as_secs_f64() * 1e3,
            100.0 * gbps(elements, kernel) / copy,
        );
    }
}
