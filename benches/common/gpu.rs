//! What the GPU tables of `norm_kernels` and `attention` share: PyTorch's CUDA column
//! (`benches/torch_gpu.py`) and the choice of backend behind `--wgpu` / `--cuda`.

/// PyTorch's CUDA milliseconds by label from `benches/torch_gpu.py TABLE` (run by
/// `$ADDNORM_PYTHON`, default `python3`); empty, saying so, without torch or CUDA.
#[cfg_attr(not(any(feature = "wgpu", feature = "cuda")), allow(dead_code))]
pub fn torch_times(table: &str) -> Vec<(String, f64)> {
    let python = std::env::var("ADDNORM_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/torch_gpu.py");
    match std::process::Command::new(&python)
        .args([script, table])
        .output()
    {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let (label, ms) = l.split_once('\t')?;
                Some((label.to_string(), ms.trim().parse().ok()?))
            })
            .collect(),
        _ => {
            println!("(torch: {python} with CUDA torch is not available; its column is empty)");
            vec![]
        }
    }
}

/// PyTorch's milliseconds for the row `label` in [`torch_times`]' output, if it ran.
#[cfg_attr(not(any(feature = "wgpu", feature = "cuda")), allow(dead_code))]
pub fn torch_ms(times: &[(String, f64)], label: &str) -> Option<f64> {
    times.iter().find(|(l, _)| l == label).map(|&(_, ms)| ms)
}

/// Exits with code 2, naming the feature that `--cuda` (or `--wgpu`) needs in `bench`.
/// (Typed `()`, not `!`, so that a caller's code after [`on_gpu_backend`] stays reachable
/// in a build with neither GPU feature.)
pub fn missing_feature(bench: &str, cuda: bool) {
    let feature = if cuda { "cuda" } else { "wgpu" };
    eprintln!(
        "--{feature} needs the {feature} feature: \
         cargo bench --bench {bench} --features {feature} -- --{feature}"
    );
    std::process::exit(2);
}

/// Runs `$table::<B>(&device, $reps)` on the CUDA backend when `$cuda`, else on wgpu; exits
/// with code 2, naming the feature, when that backend is not compiled in.
macro_rules! on_gpu_backend {
    ($cuda:expr, $bench:literal, $table:ident($reps:expr)) => {{
        #[allow(unused_variables)]
        let reps = $reps;
        match $cuda {
            #[cfg(feature = "cuda")]
            true => $table::<addnorm::backend::cuda::AutodiffBackend>(
                &addnorm::backend::cuda::device(),
                reps,
            ),
            #[cfg(feature = "wgpu")]
            false => $table::<addnorm::backend::wgpu::AutodiffBackend>(
                &addnorm::backend::wgpu::device(),
                reps,
            ),
            #[allow(unreachable_patterns)]
            cuda => crate::gpu::missing_feature($bench, cuda),
        }
    }};
}
pub(crate) use on_gpu_backend;
