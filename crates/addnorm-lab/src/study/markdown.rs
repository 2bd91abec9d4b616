//! `report.md`: the claims table with settings, intervals and notes; experiment A's slopes
//! and plots; Fig. 3 as published; experiment B's table (success rate, mean exact
//! accuracy, divergences, median steps to 99% exact) and its Pre-LN/Peri-LN plot;
//! experiment C's loss-vs-LR table and plots; experiment D's model-update table and plot.
//!
//! # Shapes
//! Not applicable: text.

use std::fmt::Write as _;

use addnorm::nn::Placement;

use super::claim::{claims_table, headline};
use super::claims::not_run;
use super::config::label;
use super::measures::{show_rate, success_rate};
use super::record::DemoReport;
use crate::experiments::proxies::ProxyVariant;
use crate::experiments::sweep::SweepRun;
use crate::stats::fit::geometric_mean;

/// The Markdown report of `report`.
pub fn markdown(report: &DemoReport) -> String {
    let c = &report.config;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# addnorm demo: gradient stability of residual norm placements\n"
    );
    let _ = writeln!(
        s,
        "Backend `{}`, profile `{:?}`, {:.0} s. Task: reverse, n = {}, {} symbols. Seeds {:?} \
         (Fig. 3, Lemma 2 and NormFormer's Fig. 2: 10). Intervals are 95%: exact (Clopper–Pearson) for success rates, seed-bootstrap percentile \
         intervals otherwise.\n",
        c.backend().name(),
        c.profile,
        report.wall_seconds,
        c.probe.task.length,
        c.probe.task.symbols,
        c.seeds
    );
    let _ = writeln!(
        s,
        "## Claims\n\n{}. Each verdict reads the claim's registered rule (`claims.toml`, content \
         hash `{}`) against the whole 95% interval: reproduced if all of it satisfies the rule, \
         not reproduced if none of it does, inconclusive otherwise.\n\n{}",
        headline(&report.claims),
        report.registry_hash,
        claims_table(&report.claims)
    );
    let _ = writeln!(
        s,
        "### Registered, not run by this profile\n\n{}\n",
        not_run(c)
            .iter()
            .map(|(id, needs)| format!("- `{id}`: needs {needs}."))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let _ = writeln!(
        s,
        "## A. Gradients at initialization\n\nd = {}, {} heads, d_ff = {}, W^Q = W^K = 0, one batch of {} sequences; \
         geometric means over seeds.\n\n{}",
        c.probe.model.block().d_model,
        c.probe.model.block().n_heads,
        c.probe.model.block().d_ff,
        c.probe.batch_size,
        crate::experiments::probe::table::probe_table(&report.probe)
    );
    let _ = writeln!(s, "![last layer against depth](last_layer_vs_depth.png)\n");
    let _ = writeln!(s, "![per-layer gradient norms](gradient_per_layer.png)\n");
    let _ = writeln!(s, "![residual growth](residual_growth.png)\n");
    let _ = writeln!(
        s,
        "### Fig. 3 as published\n\nThe Frobenius norm of each FFN weight's gradient averaged over \
         K = {} batches, Xavier W^Q/W^K, L = {:?}, {} seeds; geometric means over seeds.\n\n\
         ![Fig. 3](figure_3.png)\n",
        c.figure_3.batches,
        c.figure_3.depths,
        c.figure_3.seeds.len()
    );
    let w = c.figure_3_paper_width.model.block();
    let _ = writeln!(
        s,
        "The same at the paper's widths (App. A.1: d = {}, d_ff = {}, {} heads), {} seeds:\n\n\
         ![Fig. 3 at the paper's widths](figure_3_paper_width.png)\n",
        w.d_model,
        w.d_ff,
        w.n_heads,
        c.figure_3_paper_width.seeds.len()
    );
    let _ = writeln!(
        s,
        "## B. Warm-up at a high learning rate\n\nDepth {}, d = {}, LR {:e}, {} steps, AdamW, cosine decay, no clipping.\n",
        c.train_model.block().n_layers,
        c.train_model.block().d_model,
        c.learning_rate,
        c.steps
    );
    let _ = writeln!(
        s,
        "| model | warm-up | ≥99% exact | mean exact acc | diverged | median steps to 99% |\n|---|---|---|---|---|---|"
    );
    for (p, n) in c.training_pairs() {
        for &w in &c.warmups {
            let group: Vec<&SweepRun> = report
                .runs
                .iter()
                .filter(|r| r.placement == p && r.norm == n && r.warmup == w)
                .collect();
            if group.is_empty() {
                continue;
            }
            let (ok, total) = success_rate(&report.runs, p, n, w);
            let acc = group.iter().map(|r| r.final_exact_accuracy).sum::<f64>()
                / group.len().max(1) as f64;
            let div = group.iter().filter(|r| r.diverged).count();
            let mut steps: Vec<usize> = group.iter().filter_map(|r| r.steps_to_99_exact).collect();
            steps.sort_unstable();
            let median = steps
                .get(steps.len() / 2)
                .map_or("—".into(), |s| s.to_string());
            let _ = writeln!(
                s,
                "| {} | {w} | {ok}/{total} | {:.1}% | {div}/{total} | {median} |",
                label(p, n),
                100.0 * acc
            );
        }
    }
    let _ = writeln!(s, "\n![loss curves](loss_curves.png)\n");
    s.push_str(&warmup_grid_section(report));
    let _ = writeln!(
        s,
        "Pre-LN against Peri-LN (Kim et al. 2025) in the runs above without warm-up: the \
         residual stream after training, and the gradient norm over training.\n\n\
         ![Peri-LN](peri_ln.png)\n"
    );
    s.push_str(&proxies_section(report));
    s.push_str(&proxy_grid_section(report));
    s.push_str(&depth_grid_section(report));
    s.push_str(&model_update_section(report));
    s
}

/// Xiong's Fig. 2 grid and App. H's fixed LR: success and capped final loss per cell.
fn warmup_grid_section(report: &DemoReport) -> String {
    let mut s = String::from(
        "### Fig. 2: Post-LN over warm-up × peak LR, and App. H's fixed LR\n\n\
         v = the final validation loss, capped at ℓ₀ (ℓ₀ if diverged); mean over seeds.\n\n\
         | cell | ≥99% exact | mean v |\n|---|---|---|\n",
    );
    for (cell, (ok, n), v) in super::warmup_grid::cell_rows(report) {
        let _ = writeln!(s, "| {cell} | {ok}/{n} | {v:.3} |");
    }
    s.push_str("\n![Fig. 2 grid](warmup_grid.png)\n\n");
    s
}

/// Experiment C: ℓ(η) of every LR-grid variant and the peak attention logit per LR.
fn proxies_section(report: &DemoReport) -> String {
    let c = &report.config.proxies;
    let curves = super::wortsman::lr_curves(report);
    let names: String = curves
        .iter()
        .map(|(v, _)| format!(" ℓ(η) {} |", v.name()))
        .collect();
    let mut s = format!(
        "## C. Small-scale proxies (Wortsman et al. 2023)\n\nMarkov language ({} symbols, \
         {} positions; context-free loss {:.3}, floor {:.3}), Pre-LN d = {}, {} layers, \
         {} steps, AdamW β₂ 0.95, clipping 1, independent decay {:e}, warm-up 5% (the long \
         warm-up variant: {:.0}%).\n\n\
         | LR |{names} peak layer-0 logit baseline | peak layer-0 logit qk-layernorm |\n|---|{}---|---|\n",
        c.task.symbols,
        c.task.seq_len(),
        c.task.context_free_loss().unwrap_or(f64::NAN),
        c.task.entropy_floor(),
        c.model.block().d_model,
        c.model.block().n_layers,
        c.steps,
        c.weight_decay,
        100.0 * c.long_warmup,
        "---|".repeat(curves.len())
    );
    let peak = |v: ProxyVariant, lr: f64| {
        geometric_mean(
            report
                .proxies
                .iter()
                .filter(|r| r.variant == v && r.run.learning_rate == lr)
                .map(|r| r.peak_layer_0_logit()),
        )
    };
    for (i, &lr) in c.learning_rates.iter().enumerate() {
        let losses: String = curves
            .iter()
            .map(|(_, l)| format!(" {:.3} |", l[i]))
            .collect();
        let _ = writeln!(
            s,
            "| {lr:e} |{losses} {:.1} | {:.1} |",
            peak(ProxyVariant::Baseline, lr),
            peak(ProxyVariant::QkLayernorm, lr)
        );
    }
    s.push_str(
        "\n![LR sensitivity](lr_sensitivity.png)\n\n![attention logits](attention_logits.png)\n\n",
    );
    s
}

/// C's grids (`--full`): ℓ(η) and S per (size, variant); empty when the grid did not run.
fn proxy_grid_section(report: &DemoReport) -> String {
    let g = &report.config.proxy_grid;
    if report.proxy_grid.is_empty() {
        return String::new();
    }
    let c = &report.config.proxies;
    let lrs: String = c
        .learning_rates
        .iter()
        .map(|lr| format!(" {lr:e} |"))
        .collect();
    let mut s = format!(
        "### C's grids: model size, weight decay, z-loss (Wortsman Figs. 1, 3, 5, 6)\n\n\
         Every grid run trains {} steps, C's other settings kept; sizes scale d, L and heads \
         at a head size of 16 (d_ff = 4d). Capped final validation loss ℓ(η), mean over {} \
         seeds, and S against each row's own ℓ* (the coupled-decay row's S is over its eight \
         LRs; its claim takes the better of the two seven-LR windows).\n\n| size | variant |{lrs} S |\n|---|---|{}---|\n",
        g.steps,
        c.seeds.len(),
        "---|".repeat(c.learning_rates.len())
    );
    for &size in &g.sizes {
        for (variant, row_lrs) in g.variants(c, size) {
            let t = super::wortsman_grid::table(report, size, variant, &row_lrs);
            let curve = t.curve(&t.all_seeds());
            // Columns by C's grid; an extra LR below it (coupled decay) is left out here.
            let cells: String = c
                .learning_rates
                .iter()
                .map(|lr| {
                    row_lrs
                        .iter()
                        .position(|x| x == lr)
                        .map_or(" |".to_string(), |i| format!(" {:.3} |", curve[i]))
                })
                .collect();
            let score = crate::stats::sensitivity::sensitivity(&t, &t.all_seeds());
            let _ = writeln!(
                s,
                "| {} | {} |{cells} {score:.3} |",
                size.name(),
                variant.name()
            );
        }
    }
    s.push_str("\n![LR sensitivity by size](lr_sensitivity_by_size.png)\n\n");
    s
}

/// CaiT's depth grid (`--full`): each depth's success rates, Pre-LN alone and with
/// LayerScale; empty when the grid did not run.
fn depth_grid_section(report: &DemoReport) -> String {
    if report.depth_grid.is_empty() {
        return String::new();
    }
    let c = &report.config;
    let mut s = format!(
        "### CaiT's depth grid: Pre-LN with and without LayerScale\n\n\
         B's Pre-LN run (LR {:e}, no warm-up, {} steps) at each depth, LayerScale's gains \
         starting at ε = {:e}; success = ≥ 99% exact at the end, no divergence, with exact \
         95% intervals.\n\n| L | Pre-LN | Pre-LN + LayerScale |\n|---|---|---|\n",
        c.learning_rate, c.steps, c.depth_grid.layer_scale_init
    );
    for &depth in &c.depth_grid.depths {
        let [plain, scaled] = super::cait::counts(report, depth);
        let _ = writeln!(
            s,
            "| {depth} | {} | {} |",
            show_rate(plain),
            show_rate(scaled)
        );
    }
    s.push_str("\n![success rate by depth](layer_scale_by_depth.png)\n\n");
    s
}

/// Experiment D: the last model update per depth and placement.
fn model_update_section(report: &DemoReport) -> String {
    let c = &report.config.model_update;
    let mut s = format!(
        "## D. Model update against depth (DeepNet, Wang et al. 2022)\n\n‖ΔF‖ after the first of \
         {} Adam steps at LR {:e}, {}-{}-{} models, GM over {} seeds.\n\n| N | Post-LN | DeepNorm |\n|---|---|---|\n",
        c.steps,
        c.learning_rate,
        c.model.block().d_model,
        c.model.block().d_ff,
        c.model.block().n_heads,
        c.seeds.len()
    );
    let post = super::deepnet::last_update_profile(report, Placement::Post);
    let deep = super::deepnet::last_update_profile(report, Placement::DeepNorm);
    for ((n, a), (_, b)) in post.iter().zip(&deep) {
        let _ = writeln!(s, "| {n} | {a:.4} | {b:.4} |");
    }
    s.push_str(&sgd_table(report));
    s.push_str("\n![model update](model_update.png)\n");
    s
}

/// DeepNet's analysis setting: ‖ΔF‖/η after one SGD step, per depth, placement and η.
fn sgd_table(report: &DemoReport) -> String {
    let c = &report.config.model_update;
    let columns: Vec<(Placement, usize, f64)> = [Placement::Post, Placement::DeepNorm]
        .iter()
        .flat_map(|&p| {
            c.sgd_step_lengths
                .iter()
                .enumerate()
                .map(move |(k, &e)| (p, k, e))
        })
        .collect();
    let mut s = format!(
        "\nAfter ONE plain SGD step from the same initialization (§4.3's setting; no momentum, \
         clipping or decay) of length s = ‖Δθ‖, at η = s/‖∇L‖: ‖ΔF‖/η, GM over {} seeds.\n\n| N |",
        c.seeds.len()
    );
    for (p, _, e) in &columns {
        let _ = write!(s, " {p} s={e:e} |");
    }
    let _ = writeln!(s, "\n|---|{}", "---|".repeat(columns.len()));
    let profiles: Vec<Vec<(f64, f64)>> = columns
        .iter()
        .map(|&(p, k, _)| super::deepnet::sgd_profile(report, p, k))
        .collect();
    for (i, &n) in c.depths.iter().enumerate() {
        let cells: String = profiles
            .iter()
            .map(|p| format!(" {:.4} |", p[i].1))
            .collect();
        let _ = writeln!(s, "| {n} |{cells}");
    }
    s
}
