//! Every plot the demo writes, rendered from the shrunken demo of [`super::demo_workers`],
//! checked for what a machine can check: the PNG exists with the size its figure says,
//! each series has its own colour-and-dash style, and the tick labels are distinct,
//! increasing, formatted as intended (whole numbers on integer axes, no `.0` on decades)
//! and far enough apart not to overlap.

use addnorm::backend::ndarray::{AutodiffBackend as B, device};
use addnorm_lab::plot::{Chart, Figure, Tick, Values};
use addnorm_lab::runner::jobs::JobPlan;
use addnorm_lab::study::plots::figures;
use addnorm_lab::study::{DemoOptions, demo_with};

use super::TempDir;
use super::demo_workers::tiny_demo;

/// The width and height of a PNG, from its IHDR chunk.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

/// The checks every axis passes: labels distinct, values increasing, each label the
/// shortest form of its value (parses back to it; no trailing zeros after a decimal point
/// unless the step needs them), whole numbers on an integer axis.
fn check_axis(what: &str, ticks: &[Tick], values: Values) {
    assert!(
        ticks.len() >= 2,
        "{what}: only {} ticks: {ticks:?}",
        ticks.len()
    );
    for pair in ticks.windows(2) {
        assert!(
            pair[0].value < pair[1].value,
            "{what}: ticks not increasing: {ticks:?}"
        );
        assert_ne!(
            pair[0].label, pair[1].label,
            "{what}: repeated label: {ticks:?}"
        );
    }
    for tick in ticks {
        let parsed: f64 = tick
            .label
            .parse()
            .unwrap_or_else(|_| panic!("{what}: {tick:?}"));
        assert!(
            (parsed - tick.value).abs() <= 1e-9 * tick.value.abs().max(1e-12),
            "{what}: label {} shows {}",
            tick.label,
            tick.value
        );
        if values == Values::Integer {
            assert!(
                tick.value.fract() == 0.0 && !tick.label.contains('.'),
                "{what}: fractional tick on an integer axis: {tick:?}"
            );
        }
    }
}

fn check_chart(file: &str, chart: &Chart, size: (u32, u32)) {
    let what = format!("{file}: {}", chart.title);
    assert_eq!(
        chart.repeated_style(),
        None,
        "{what}: two series look alike"
    );
    assert!(
        !chart.x_label.is_empty() && !chart.y_label.is_empty(),
        "{what}"
    );
    let (x, y) = chart.ticks(size);
    check_axis(&format!("{what}: x"), &x, chart.x_values);
    check_axis(&format!("{what}: y"), &y, Values::Real);
    for ((axis, pixels), ticks) in chart.axes(size).iter().zip([&x, &y]) {
        assert!(
            axis.fits(ticks, *pixels),
            "{what}: overlapping labels {ticks:?}"
        );
    }
}

/// The PNG files in the workspace folder `dir`, sorted.
fn pngs_in(dir: &str) -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(dir);
    let mut names: Vec<String> = std::fs::read_dir(path)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".png"))
        .collect();
    names.sort();
    names
}

#[test]
fn every_plot_renders_with_readable_axes_and_legends() {
    let dir = TempDir::new("plots");
    let options = DemoOptions {
        progress: false,
        plan: JobPlan {
            jobs: 2,
            threads: 1,
        },
        stale_after: std::time::Duration::from_secs(300),
        writes_report: true,
    };
    let outcome = demo_with::<B>(&tiny_demo(), dir.path(), &options, &device()).expect("demo");
    let report = outcome.report.expect("one worker finishes the report");
    let figures: Vec<Figure> = figures(&report);
    // The tiny demo runs the `--full` grids, so it writes the grids' two plots beside the
    // eleven.
    assert_eq!(
        figures.len(),
        13,
        "the demo's eleven plots and the grids' two"
    );
    let mut written: Vec<String> = figures.iter().map(|f| f.file.to_string()).collect();
    written.sort();
    let grids_only = ["lr_sensitivity_by_size.png", "layer_scale_by_depth.png"];
    let quick: Vec<String> = written
        .iter()
        .filter(|f| !grids_only.contains(&f.as_str()))
        .cloned()
        .collect();
    for (dir, expected) in [("docs/demo", &quick), ("docs/demo-full", &written)] {
        assert_eq!(
            &pngs_in(dir),
            expected,
            "{dir}/ holds every plot its profile writes, and no other"
        );
    }
    for figure in &figures {
        let bytes = std::fs::read(dir.path().join(figure.file))
            .unwrap_or_else(|e| panic!("{}: {e}", figure.file));
        assert_eq!(png_size(&bytes), figure.size(), "{}", figure.file);
        for chart in &figure.charts {
            check_chart(figure.file, chart, (figure.width_each, figure.height));
        }
    }
}
