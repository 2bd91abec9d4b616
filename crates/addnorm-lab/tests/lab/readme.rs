//! The README's facts about the lab come from the code: the demo's default seed counts,
//! the plots in `docs/demo/` (every one the demo writes, rebuilt by the documented command)
//! and the generated line that names the run they come from.

use addnorm_lab::runner::jobs::JobPlan;
use addnorm_lab::study::default_seeds;

fn workspace_file(path: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The README's sentence "4 per run, at least 4 and at most 10 (4 with one run, 8 with
/// two, …, 10 from three on)" against [`default_seeds`] (runs trained at once: the demo's
/// processes × jobs), whatever its line breaks.
#[test]
fn readme_states_the_demo_default_seed_counts() {
    let readme = workspace_file("README.md");
    let words = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let seeds = |jobs| default_seeds(JobPlan { jobs, threads: 1 });
    let expected = format!(
        "4 per run, at least {} and at most {} ({} with one run, {} with two, so {} on a \
         2-core machine, {} from three on)",
        seeds(1),
        seeds(64),
        seeds(1),
        seeds(2),
        seeds(2),
        seeds(3)
    );
    assert!(
        words.contains(&expected),
        "README.md should say: {expected}"
    );
}

/// `docs/demo/` holds a report and the plots of one run, and the README's generated line
/// names that run.
#[test]
fn docs_demo_is_one_generated_run() {
    let readme = workspace_file("README.md");
    let block = readme
        .split("<!-- rebuild-demo: begin -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- rebuild-demo: end -->").next())
        .expect("README.md has the rebuild-demo block");
    assert!(
        block.contains("Last rebuilt on") && block.contains("Claims: published"),
        "run `bash docs/rebuild-demo.sh`: the block reads {block:?}"
    );
    let report = workspace_file("docs/demo/report.md");
    assert!(report.starts_with("# addnorm demo"), "docs/demo/report.md");
}
