//! `addnorm merge DIR... --out DIR`: joins the directories of a sweep's shards (or of
//! workers that did not share a directory) into one, then writes the report if every run
//! is there.
//!
//! It refuses, with exit code 2 and nothing written, directories whose sweep
//! configurations differ (naming the first differing field) and a run finished in two
//! directories with different results. A run is copied into `--out/runs/<name>/` through a
//! temporary directory and a rename, so an interrupted merge leaves no half-copied run.

use std::path::{Path, PathBuf};

use super::collect::saved_config;
use super::config_diff::{adopt_config, first_difference};
use super::worker::finished;
use crate::error::LabError;
use crate::experiments::sweep::{SweepConfig, collect, summarize};

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LabError + '_ {
    move |e| LabError::io(path, e)
}

/// Copies the directory `from` into `to` (created), recursively.
fn copy_dir(from: &Path, to: &Path) -> Result<(), LabError> {
    std::fs::create_dir_all(to).map_err(io(to))?;
    for entry in std::fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        let target = to.join(entry.file_name());
        if entry.file_type().map_err(io(&entry.path()))?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).map_err(io(&target))?;
        }
    }
    Ok(())
}

/// A finished run's results as JSON (NaN-safe to compare, unlike `f64`).
fn results(config: &SweepConfig, dir: &Path, name: &str) -> Option<serde_json::Value> {
    let p = config
        .grid()
        .into_iter()
        .find(|p| config.run_name(p) == name)?;
    let train_config = config.point_config(&p);
    let summary = finished(&dir.join("runs").join(name), train_config.steps)?;
    Some(serde_json::to_value(summarize(&train_config, config.norm, &summary)).expect("json"))
}

/// For every run, the first directory (out first) that has it finished; or the message of
/// the first conflict.
fn plan(
    config: &SweepConfig,
    dirs: &[PathBuf],
    out: &Path,
) -> Result<Vec<(String, PathBuf)>, String> {
    let mut copies = vec![];
    for p in config.grid() {
        let name = config.run_name(&p);
        let mut first: Option<(&Path, serde_json::Value)> =
            results(config, out, &name).map(|r| (out, r));
        for dir in dirs {
            let Some(r) = results(config, dir, &name) else {
                continue;
            };
            match &first {
                Some((seen, theirs)) if *theirs != r => {
                    return Err(format!(
                        "run {name} is finished in {} and in {} with different results",
                        seen.display(),
                        dir.display()
                    ));
                }
                Some(_) => {}
                None => {
                    copies.push((name.clone(), dir.clone()));
                    first = Some((dir.as_path(), r));
                }
            }
        }
    }
    Ok(copies)
}

/// Checks that every directory holds the same sweep; returns it, or the message.
fn common_config(dirs: &[PathBuf], out: &Path) -> Result<SweepConfig, String> {
    let first = dirs.first().ok_or("merge needs at least one directory")?;
    let config = saved_config(first)?;
    let saved_out = out
        .join("config.json")
        .exists()
        .then(|| (out.to_path_buf(), saved_config(out)));
    for (dir, other) in dirs[1..]
        .iter()
        .map(|d| (d.clone(), saved_config(d)))
        .chain(saved_out)
    {
        if let Some(d) = first_difference(&config, &other?) {
            return Err(format!(
                "{} and {} hold different sweeps ({d})",
                first.display(),
                dir.display()
            ));
        }
    }
    Ok(config)
}

/// `addnorm merge`: returns 0 when merged, 2 (nothing written) on a conflict.
///
/// # Errors
/// If a run cannot be copied or `--out` cannot be written.
pub fn run(dirs: &[PathBuf], out: &Path) -> Result<i32, LabError> {
    let checked = common_config(dirs, out).and_then(|c| plan(&c, dirs, out).map(|p| (c, p)));
    let (config, copies) = match checked {
        Ok(v) => v,
        Err(message) => {
            eprintln!("error: merge: {message}");
            return Ok(2);
        }
    };
    adopt_config(&config, out)?;
    let runs = out.join("runs");
    for (name, from) in &copies {
        let staging = runs.join(format!(".{name}.merging-{}", std::process::id()));
        copy_dir(&from.join("runs").join(name), &staging)?;
        let target = runs.join(name);
        if target.exists() {
            // An unfinished copy of the run: the finished one replaces it.
            std::fs::remove_dir_all(&target).map_err(io(&target))?;
        }
        std::fs::rename(&staging, &target).map_err(io(&target))?;
    }
    println!("merged {} runs into {}", copies.len(), out.display());
    match collect(&config, out)? {
        Ok(report) => {
            print!(
                "{}",
                crate::experiments::sweep::tables::sweep_tables(&report)
            );
            println!("files: {}", out.join("sweep.json").display());
        }
        Err(missing) => println!(
            "{} runs are still missing, so no sweep.json yet: {}",
            missing.len(),
            missing.join(", ")
        ),
    }
    Ok(0)
}
