//! The seed notebooks' demonstrations, redone with addnorm's modules.
//!
//! Each section names the notebook it follows, prints what the notebook printed next to
//! what we compute, and shows which configuration of [`LayerNormConfig`] / [`RmsNormConfig`]
//! the notebook's hand-written class is.
//!
//! ```text
//! cargo run --release --example seed_walkthrough            # ndarray
//! cargo run --release --example seed_walkthrough --features wgpu
//! ```

use addnorm::backend::{Backend, PREFERRED, device};
use addnorm::nn::{Affine, EpsilonPlacement, LayerNormConfig, RmsNormConfig, Variance};
use burn::nn::{LinearConfig, Relu};
use burn::tensor::{Distribution, Tensor, TensorData};

// The lab's library is linked only for build time: it has already compiled Burn's code for
// every enabled backend, and at the dev profile's opt-level 1 rustc reuses those generic
// instances instead of compiling them again (`cargo test` builds examples: this one took
// about 5 CPU-minutes on its own, and takes seconds beside the lab). Nothing of the lab is
// used: this is a plain library user's program.
use addnorm_lab as _;

/// Per-row mean and variance (unbiased, as `torch.var`'s default) of a `[rows, n]` tensor.
fn row_stats(t: &Tensor<Backend, 2>) -> (Vec<f32>, Vec<f32>) {
    let mean = t.clone().mean_dim(1);
    let var = t.clone().var(1);
    (
        mean.into_data().to_vec().unwrap(),
        var.into_data().to_vec().unwrap(),
    )
}

fn fmt(v: &[f32]) -> String {
    let parts: Vec<String> = v.iter().map(|x| format!("{x:8.4}")).collect();
    format!("[{}]", parts.join(", "))
}

fn heading(title: &str) {
    println!(
        "\n== {title} {}",
        "=".repeat(72usize.saturating_sub(title.len()))
    );
}

fn main() {
    let device = device();
    println!("addnorm seed walkthrough on the {PREFERRED} backend");

    heading("1. A Linear+ReLU batch, before and after (notebook 000)");
    // torch.manual_seed(123) cannot be replayed outside PyTorch: take the batch it printed.
    let out = Tensor::<Backend, 2>::from_floats(
        [
            [0.2260, 0.3470, 0.0000, 0.2216, 0.0000, 0.0000],
            [0.2133, 0.2394, 0.0000, 0.5198, 0.3297, 0.0000],
        ],
        &device,
    );
    let (mean, var) = row_stats(&out);
    println!("before   mean {}   (notebook [0.1324, 0.2170])", fmt(&mean));
    println!("         var  {}   (notebook [0.0231, 0.0398])", fmt(&var));
    // The notebook divides by the unbiased std with no ε: that is this configuration (ε
    // must be positive, so the smallest that changes nothing in f32).
    let notebook = LayerNormConfig::new(vec![6])
        .with_variance(Variance::Unbiased)
        .with_epsilon_placement(EpsilonPlacement::AddedToStd)
        .with_epsilon(1e-12)
        .with_affine(Affine::Off)
        .init::<Backend>(&device);
    let (mean, var) = row_stats(&notebook.forward(out.clone()));
    println!("after    mean {}   (notebook [0.0000, 0.0000])", fmt(&mean));
    println!("         var  {}   (notebook [1.0000, 1.0000])", fmt(&var));
    let (_, var) = row_stats(
        &LayerNormConfig::new(vec![6])
            .init::<Backend>(&device)
            .forward(out),
    );
    println!(
        "default LayerNorm (÷n, ε under √): var {}   = 6/5 in torch.var's ÷(n−1)",
        fmt(&var)
    );

    heading("2. Biased against unbiased variance (notebooks 001, 004)");
    let row = Tensor::<Backend, 2>::from_floats([[1.0, 2.0, 3.0, 4.0]], &device);
    for (label, variance) in [
        ("Variance::Biased   (÷n)    ", Variance::Biased),
        ("Variance::Unbiased (÷(n−1))", Variance::Unbiased),
    ] {
        let norm = LayerNormConfig::new(vec![4])
            .with_variance(variance)
            .with_epsilon_placement(EpsilonPlacement::AddedToStd)
            .with_affine(Affine::Scalar)
            .init::<Backend>(&device);
        let y: Vec<f32> = norm.forward(row.clone()).into_data().to_vec().unwrap();
        println!("{label}  {}", fmt(&y));
    }
    println!("notebook 004 (unbiased std, ε on the std) prints [-1.1619, -0.3873, 0.3873, 1.1619]");
    let after = LayerNormConfig::new(vec![3])
        .init::<Backend>(&device)
        .forward(Tensor::<Backend, 2>::from_floats(
            [[0.4593, 0.0, 0.2737], [0.5204, 0.0, 0.3925]],
            &device,
        ));
    let (_, var) = row_stats(&after);
    println!(
        "notebook 001: nn.LayerNorm(3) output has unbiased var [1.4996, 1.4997]; ours {}",
        fmt(&var)
    );

    heading("3. Several normalized dimensions (notebooks 002, 003)");
    let x = Tensor::<Backend, 3>::from_floats([[[0.2, 0.1, 0.3]], [[0.5, 0.1, 0.1]]], &device);
    let ln2 = LayerNormConfig::new(vec![1, 3]).init::<Backend>(&device);
    let y: Vec<f32> = ln2.forward(x).into_data().to_vec().unwrap();
    println!("normalized_shape [1, 3]: {}", fmt(&y));
    println!("notebook 002 prints       [[0.0000, -1.2238, 1.2238]], [[1.4140, -0.7070, -0.7070]]");

    heading("4. LayerNorm against RMSNorm statistics (notebook 001)");
    let x = Tensor::<Backend, 3>::random([1, 1024, 2048], Distribution::Uniform(0.0, 1.0), &device);
    let linear = LinearConfig::new(2048, 1500).init::<Backend>(&device);
    let h = Relu::new().forward(linear.forward(x)).reshape([1024, 1500]);
    let summary = |t: &Tensor<Backend, 2>| {
        let (m, v) = row_stats(t);
        (
            m.iter().sum::<f32>() / m.len() as f32,
            v.iter().sum::<f32>() / v.len() as f32,
        )
    };
    let (m, v) = summary(&h);
    println!("before           mean {m:.4}  var {v:.4}   (notebook 0.1235, 0.0346)");
    let ln = LayerNormConfig::new(vec![1500])
        .with_epsilon(1e-6)
        .with_epsilon_placement(EpsilonPlacement::AddedToStd)
        .with_affine(Affine::Scalar)
        .init::<Backend>(&device);
    let (m, v) = summary(&ln.forward(h.clone()));
    println!("LayerNormalization mean {m:.4}  var {v:.4}   (notebook 0.0000, 1.0007 = 1500/1499)");
    let rms = RmsNormConfig::new(vec![1500])
        .with_affine(Affine::Scalar)
        .init::<Backend>(&device);
    let (m, v) = summary(&rms.forward(h));
    println!(
        "RMSLayerNorm     mean {m:.4}  var {v:.4}   (notebook 0.5532, 0.6944; mean² + var ≈ 1)"
    );

    heading("5. Ours against Burn's built-in norms");
    let x = Tensor::<Backend, 3>::random([4, 16, 64], Distribution::Normal(2.0, 3.0), &device);
    let ours = LayerNormConfig::new(vec![64]).init::<Backend>(&device);
    let burns = burn::nn::LayerNormConfig::new(64).init::<Backend>(&device);
    let diff: f32 = (ours.forward(x.clone()) - burns.forward(x.clone()))
        .abs()
        .max()
        .into_scalar();
    println!("LayerNorm: max |addnorm − burn::nn| = {diff:.2e}");
    let ours = RmsNormConfig::new(vec![64])
        .with_epsilon(1e-5)
        .init::<Backend>(&device);
    let burns = burn::nn::RmsNormConfig::new(64).init::<Backend>(&device);
    let diff: f32 = (ours.forward(x.clone()) - burns.forward(x))
        .abs()
        .max()
        .into_scalar();
    println!("RmsNorm:   max |addnorm − burn::nn| = {diff:.2e}");

    let offset =
        Tensor::<Backend, 2>::random([8, 1024], Distribution::Normal(0.0, 1e-2), &device) + 1e4;
    // The truth, computed in f64 from the same f32 inputs.
    let truth: Vec<f32> = offset
        .clone()
        .into_data()
        .convert::<f64>()
        .to_vec::<f64>()
        .unwrap()
        .chunks(1024)
        .flat_map(|r| {
            let m = r.iter().sum::<f64>() / 1024.0;
            let v = r.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 1024.0;
            r.iter().map(move |x| ((x - m) / (v + 1e-5).sqrt()) as f32)
        })
        .collect();
    let reference = Tensor::<Backend, 2>::from_data(TensorData::new(truth, [8, 1024]), &device);
    let ours = LayerNormConfig::new(vec![1024]).init::<Backend>(&device);
    let burns = burn::nn::LayerNormConfig::new(1024).init::<Backend>(&device);
    let err = |y: Tensor<Backend, 2>| -> f32 { (y - reference.clone()).abs().max().into_scalar() };
    println!(
        "rows with mean 1e4, std 1e-2: max error addnorm {:.2e}, burn::nn {:.2e}",
        err(ours.forward(offset.clone())),
        err(burns.forward(offset))
    );
}
