//! Causal multi-head attention, forward + backward, on `Autodiff<NdArray<f32>>`: addnorm's
//! fused CPU kernels against the composite path (Burn tensor ops, differentiated op by op,
//! forced with `ForceComposite`) and against PyTorch's
//! `torch.nn.functional.scaled_dot_product_attention` (`benches/torch_attention.py`, run
//! as a child process with the same thread count when `python3` with torch is at hand).
//!
//! ```text
//! cargo bench --bench attention
//! cargo bench --bench attention -- --reps 40     # steps per case for T ≤ 128 (default 30)
//! cargo bench --bench attention -- --no-torch    # skip the PyTorch column
//! cargo bench --bench attention -- --case 16,4,128,32 --fused-only   # to profile one case
//! cargo bench --bench attention -- --default-malloc --outside-pool  # see below
//! cargo bench --bench attention --features wgpu -- --wgpu   # the CubeCL kernels
//! cargo bench --bench attention --features cuda -- --cuda   # the same on CUDA, beside torch
//! cargo bench --bench attention -- --softcap 50  # Gemma 2's logit soft cap: its cost
//! ```
//!
//! As `addnorm train` does, the bench applies
//! `addnorm_kernels::cpu::allocator::keep_freed_memory` and runs the steps on a worker of a
//! rayon pool (`--default-malloc` and `--outside-pool` leave each out).
//!
//! With `--wgpu` the same steps run on `Autodiff<Wgpu<f32>>` (Burn's default wgpu type,
//! with fusion), synced after each step: addnorm's CubeCL attention kernels against the
//! composite path on the same device (no torch column, no RSS).
//!
//! A step is `O = attention(Q, K, V)` on `[batch, T, heads·d_head]` tensors (the
//! projections' layout), `loss = Σ O·dO`, `loss.backward()`, with Q, K and V requiring
//! gradients. Fused and composite steps run in alternating blocks of consecutive steps, so
//! a change of machine load hits both alike; the table prints medians and the ratios
//! composite / fused and torch / fused (above 1: fused is faster).
//!
//! Peak RSS is the growth of `VmHWM` over one step in a fresh child process, after the
//! inputs exist and one warm-up step ran (`VmHWM` reset through `/proc/self/clear_refs`):
//! what the step itself needs at its peak.

#[path = "common/gpu.rs"]
mod gpu;

use std::process::Command;
use std::time::{Duration, Instant};

use addnorm_kernels::AttentionBackend;
use addnorm_kernels::attention::{AttentionSpec, attention};
use addnorm_kernels::composite::ForceComposite;
use addnorm_kernels::cpu::allocator::keep_freed_memory;
use addnorm_kernels::fused::fused_calls;
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Device, Distribution, Tensor};

type Ad = Autodiff<NdArray<f32>>;

/// `(batch, heads, T, d_head)`, the issue's three shapes.
const CASES: [[usize; 4]; 3] = [[32, 2, 17, 16], [16, 4, 128, 32], [4, 8, 1024, 64]];

/// Which implementation a step runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Variant {
    Fused,
    Composite,
}

/// The leaves and the output gradient of one case, on backend `B`.
struct Inputs<B: AutodiffBackend> {
    qkv: [Tensor<B, 3>; 3],
    d_out: Tensor<B, 3>,
    spec: AttentionSpec,
    device: Device<B>,
}

impl<B: AutodiffBackend + AttentionBackend> Inputs<B> {
    fn new([batch, heads, seq, d_head]: [usize; 4], device: &Device<B>) -> Self {
        let shape = [batch, seq, heads * d_head];
        let random = || Tensor::<B, 3>::random(shape, Distribution::Normal(0.0, 1.0), device);
        Self {
            qkv: [random(), random(), random()],
            d_out: random(),
            spec: AttentionSpec::causal(heads, d_head),
            device: device.clone(),
        }
    }

    /// These inputs with the logits soft-capped at `cap`, when given.
    fn capped(mut self, cap: Option<f64>) -> Self {
        self.spec.softcap = cap;
        self
    }

    /// One forward + backward; returns its wall time.
    ///
    /// # Panics
    /// If the fused variant ran no fused kernel or the composite one ran one.
    fn step(&self, variant: Variant) -> Duration {
        let _composite = (variant == Variant::Composite).then(ForceComposite::new);
        let before = fused_calls();
        let start = Instant::now();
        let [q, k, v] = self.qkv.clone().map(Tensor::require_grad);
        let o = attention(q.clone(), k, v, self.spec);
        let grads = (o * self.d_out.clone()).sum().backward();
        let dq = q.grad(&grads).expect("dq");
        B::sync(&self.device).expect("the device syncs");
        let time = start.elapsed();
        std::hint::black_box(dq);
        let fused = fused_calls().backward > before.backward;
        assert_eq!(
            fused,
            variant == Variant::Fused,
            "{variant:?} took the wrong path"
        );
        time
    }
}

/// `"batch,heads,T,d_head"` as a case.
///
/// # Panics
/// If it is not four comma-separated positive integers.
fn parse_case(text: &str) -> [usize; 4] {
    let dims: Vec<usize> = text
        .split(',')
        .map(|v| v.trim().parse().expect("--case takes batch,heads,T,d_head"))
        .collect();
    dims.try_into()
        .expect("--case takes four dimensions: batch,heads,T,d_head")
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Rounds of blocks: each variant runs its steps in this many blocks of consecutive steps,
/// the variants' blocks alternating, so a change of machine load hits both alike.
const ROUNDS: usize = 3;

/// Median step times `(fused, composite)` over `reps` steps each (composite zero with
/// `fused_only`).
fn time_case<B: AutodiffBackend + AttentionBackend>(
    case: [usize; 4],
    reps: usize,
    device: &Device<B>,
    fused_only: bool,
) -> (Duration, Duration) {
    time_inputs(Inputs::<B>::new(case, device), reps, fused_only)
}

/// [`time_case`] on given inputs.
fn time_inputs<B: AutodiffBackend + AttentionBackend>(
    inputs: Inputs<B>,
    reps: usize,
    fused_only: bool,
) -> (Duration, Duration) {
    let variants: &[Variant] = if fused_only {
        &[Variant::Fused]
    } else {
        &[Variant::Fused, Variant::Composite]
    };
    let mut times = [vec![], vec![]];
    for _ in 0..ROUNDS {
        for (i, &variant) in variants.iter().enumerate() {
            inputs.step(variant);
            times[i].extend((0..reps.max(1).div_ceil(ROUNDS)).map(|_| inputs.step(variant)));
        }
    }
    let [fused, composite] = times;
    let composite = if fused_only {
        Duration::ZERO
    } else {
        median(composite)
    };
    (median(fused), composite)
}

/// A field of `/proc/self/status` in KiB.
fn status_kib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// In a child process: one warm-up step, reset the peak, one step; prints the peak growth
/// in MiB.
fn child(variant: Variant, case: [usize; 4]) {
    let inputs = Inputs::<Ad>::new(case, &Default::default());
    inputs.step(variant);
    let before = status_kib("VmRSS");
    std::fs::write("/proc/self/clear_refs", "5").expect("reset VmHWM");
    inputs.step(variant);
    println!("{}", (status_kib("VmHWM") - before) / 1024.0);
}

/// The peak RSS growth (MiB) of one step of `variant` on `case`, from a child process.
fn peak_rss(variant: Variant, case: [usize; 4]) -> f64 {
    let spec = case.map(|v| v.to_string()).join(",");
    let output = Command::new(std::env::current_exe().expect("bench binary"))
        .args(["--child", &format!("{variant:?}"), &spec])
        .output()
        .expect("spawn the child");
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap_or(f64::NAN)
}

/// PyTorch's `(median ms, peak MiB)` per case, from `benches/torch_attention.py`; empty
/// when it cannot run.
fn torch_results(reps: usize, extra: &[&str]) -> Vec<([usize; 4], f64, f64)> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/torch_attention.py");
    let threads = rayon::current_num_threads().to_string();
    let Ok(output) = Command::new("python3")
        .args([script, "--threads", &threads, "--reps", &reps.to_string()])
        .args(extra)
        .output()
    else {
        return vec![];
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .filter_map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).ok()?;
            let case: Vec<usize> = serde_json::from_value(value["case"].clone()).ok()?;
            Some((
                case.try_into().ok()?,
                value["median_ms"].as_f64()?,
                value["peak_rss_mib"].as_f64()?,
            ))
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // The peak-RSS children keep glibc's defaults: with freed memory kept, the measured
    // step would reuse the warm-up step's pages and show no growth.
    if !args
        .iter()
        .any(|a| a == "--default-malloc" || a == "--child")
    {
        keep_freed_memory();
    }
    if args.iter().any(|a| a == "--outside-pool") {
        return run(&args);
    }
    rayon::ThreadPoolBuilder::new()
        .build()
        .expect("a rayon pool can be built")
        .install(|| run(&args));
}

/// The flag's value, if given.
fn value_of<'a>(args: &'a [String], flag: &str) -> Option<&'a String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
}

fn run(args: &[String]) {
    if let Some(i) = args.iter().position(|a| a == "--child") {
        let variant = match args[i + 1].as_str() {
            "Fused" => Variant::Fused,
            _ => Variant::Composite,
        };
        child(variant, parse_case(&args[i + 2]));
        return;
    }
    let reps = value_of(args, "--reps")
        .map_or(30, |v| v.parse().expect("--reps takes a positive integer"));
    if args.iter().any(|a| a == "--wgpu" || a == "--cuda") {
        gpu::on_gpu_backend!(
            args.iter().any(|a| a == "--cuda"),
            "attention",
            gpu_table(reps)
        );
        return;
    }
    if let Some(cap) = value_of(args, "--softcap") {
        softcap_table(reps, cap);
        return;
    }
    let cases: Vec<[usize; 4]> = match value_of(args, "--case") {
        Some(case) => vec![parse_case(case)],
        None => CASES.to_vec(),
    };
    let fused_only = args.iter().any(|a| a == "--fused-only");
    let torch = if fused_only || args.iter().any(|a| a == "--no-torch") {
        vec![]
    } else {
        torch_results(reps, &[])
    };
    println!(
        "Causal attention, forward + backward (loss = Σ O·dO), Autodiff<NdArray<f32>>, {} \
         rayon threads; [batch, heads, T, d_head]; median step; peak RSS = growth of VmHWM \
         over one step in a child process. torch: scaled_dot_product_attention (CPU), same \
         threads, from benches/torch_attention.py.\n",
        rayon::current_num_threads()
    );
    println!(
        "{:<18} {:>10} {:>12} {:>10} {:>11} {:>10} {:>10} {:>10} {:>10}",
        "shape",
        "fused",
        "composite",
        "torch",
        "comp/fused",
        "torch/fused",
        "RSS fused",
        "RSS comp",
        "RSS torch"
    );
    for case in cases {
        let case_reps = (reps / (1 + case[2] / 128)).max(3);
        let (fused, composite) = time_case::<Ad>(case, case_reps, &Default::default(), fused_only);
        let (rss_fused, rss_composite) = if fused_only {
            (f64::NAN, f64::NAN)
        } else {
            (
                peak_rss(Variant::Fused, case),
                peak_rss(Variant::Composite, case),
            )
        };
        let torch_case = torch.iter().find(|(c, ..)| *c == case);
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let (torch_ms, torch_rss) = torch_case.map_or((f64::NAN, f64::NAN), |&(_, t, r)| (t, r));
        println!(
            "{:<18} {:>7.2} ms {:>9.2} ms {:>7.2} ms {:>10.2}× {:>10.2}× {:>6.1} MiB {:>6.1} MiB {:>6.1} MiB",
            format!("{case:?}"),
            ms(fused),
            ms(composite),
            torch_ms,
            composite.as_secs_f64() / fused.as_secs_f64(),
            torch_ms / ms(fused),
            rss_fused,
            rss_composite,
            torch_rss,
        );
    }
}

/// `--softcap C`: what Gemma 2's logit soft cap costs. The fused CPU kernels with and
/// without the cap, the composite path with it, and PyTorch's eager attention with it
/// (`scaled_dot_product_attention` has no cap; Gemma 2's reference code caps in eager
/// attention).
fn softcap_table(reps: usize, cap: &str) {
    let cap_value: f64 = cap.parse().expect("--softcap takes a positive number");
    let torch = torch_results(reps, &["--softcap", cap]);
    println!(
        "Causal attention with logits soft-capped at c = {cap} (S ← c·tanh(S/c)), forward + \
         backward, Autodiff<NdArray<f32>>, {} rayon threads; median step. torch: eager \
         attention with the same cap (benches/torch_attention.py --softcap).\n",
        rayon::current_num_threads()
    );
    println!(
        "{:<18} {:>12} {:>10} {:>12} {:>10} {:>11} {:>11} {:>11}",
        "shape",
        "fused, cap",
        "no cap",
        "comp, cap",
        "torch, cap",
        "cap cost",
        "comp/fused",
        "torch/fused"
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for case in CASES {
        let reps = (reps / (1 + case[2] / 128)).max(3);
        let device = Default::default();
        let (fused, composite) = time_inputs(
            Inputs::<Ad>::new(case, &device).capped(Some(cap_value)),
            reps,
            false,
        );
        let (plain, _) = time_inputs(Inputs::<Ad>::new(case, &device), reps, true);
        let torch_ms = torch
            .iter()
            .find(|(c, ..)| *c == case)
            .map_or(f64::NAN, |t| t.1);
        println!(
            "{:<18} {:>9.2} ms {:>7.2} ms {:>9.2} ms {:>7.2} ms {:>10.2}× {:>10.2}× {:>10.2}×",
            format!("{case:?}"),
            ms(fused),
            ms(plain),
            ms(composite),
            torch_ms,
            ms(fused) / ms(plain),
            ms(composite) / ms(fused),
            torch_ms / ms(fused),
        );
    }
}

/// The GPU table on autodiff backend `B`: fused CubeCL attention against the composite path
/// on the same device, plain and with Gemma 2's soft cap at 50, beside PyTorch on CUDA
/// (`scaled_dot_product_attention`; eager attention for the capped rows) when it runs here.
#[cfg_attr(not(any(feature = "wgpu", feature = "cuda")), allow(dead_code))]
fn gpu_table<B: AutodiffBackend + AttentionBackend>(device: &Device<B>, reps: usize) {
    let adapter = B::name(device);
    let torch = gpu::torch_times("attention");
    println!(
        "Causal attention, forward + backward (loss = Σ O·dO), {adapter}, synced after each \
         step; [batch, heads, T, d_head]; median step. torch: PyTorch on CUDA \
         (benches/torch_gpu.py attention), run first.\n"
    );
    println!(
        "{:<24} {:>12} {:>12} {:>11} {:>12} {:>12}",
        "shape", "fused", "composite", "comp/fused", "torch", "torch/fused"
    );
    for cap in [None, Some(50.0)] {
        for case in CASES {
            let case_reps = (reps / (1 + case[2] / 128)).max(1);
            let inputs = Inputs::<B>::new(case, device).capped(cap);
            let (fused, composite) = time_inputs(inputs, case_reps, false);
            let label = format!("{case:?}") + &cap.map_or(String::new(), |c| format!(" cap {c}"));
            let torch_ms = gpu::torch_ms(&torch, &label);
            let ms = |d: Duration| d.as_secs_f64() * 1e3;
            println!(
                "{:<24} {:>9.3} ms {:>9.3} ms {:>10.2}× {:>12} {:>12}",
                label,
                ms(fused),
                ms(composite),
                ms(composite) / ms(fused),
                torch_ms.map_or("-".into(), |t| format!("{t:.3} ms")),
                torch_ms.map_or("-".into(), |t| format!("{:.2}×", t / ms(fused))),
            );
        }
    }
}
