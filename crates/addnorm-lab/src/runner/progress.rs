//! Progress over many items (runs, parts): a bar on a terminal, and off one (a pipe, a
//! file, CI, a Slurm log) a line every tenth of the work (at most one every
//! [`QUIET`]) with counts, elapsed time and ETA, then one summary line.
//!
//! ```text
//! B, C: train: 26/256 runs, 0:41 elapsed, ETA 6:03
//! ...
//! B, C: train: 256 runs done in 6:41
//! ```
//!
//! # Shapes
//! `len` items; [`Progress::inc`] once per finished item, from any thread. The methods
//! mirror indicatif's `ProgressBar` (`set_message`, `inc`, `finish_and_clear`).

use std::io::IsTerminal;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// The least time between two progress lines off a terminal: a part that takes seconds
/// prints its summary line only.
pub const QUIET: Duration = Duration::from_secs(5);

/// How progress shows: a bar, lines, or not at all.
pub struct Progress {
    bar: ProgressBar,
    lines: Option<Lines>,
}

/// The line log kept off a terminal.
struct Lines {
    label: String,
    unit: &'static str,
    len: usize,
    every: usize,
    done: AtomicUsize,
    started: Instant,
    /// When the last line was printed.
    last: Mutex<Instant>,
}

impl Progress {
    /// Progress over `len` items named `unit` (e.g. `"runs"`), labelled `label`: a bar on
    /// a terminal, lines off one, nothing unless `visible`.
    pub fn new(len: usize, label: &str, unit: &'static str, visible: bool) -> Self {
        Self::with_terminal(len, label, unit, visible, std::io::stderr().is_terminal())
    }

    /// As [`Progress::new`], saying whether standard error is a terminal.
    pub fn with_terminal(
        len: usize,
        label: &str,
        unit: &'static str,
        visible: bool,
        terminal: bool,
    ) -> Self {
        if !visible || len == 0 {
            return Self {
                bar: ProgressBar::hidden(),
                lines: None,
            };
        }
        if terminal {
            return Self {
                bar: bar(len, label, unit),
                lines: None,
            };
        }
        Self {
            bar: ProgressBar::hidden(),
            lines: Some(Lines {
                label: label.to_string(),
                unit,
                len,
                every: len.div_ceil(10),
                done: AtomicUsize::new(0),
                started: Instant::now(),
                last: Mutex::new(Instant::now()),
            }),
        }
    }

    /// The message shown after the bar (the last item's name); not printed off a terminal.
    pub fn set_message(&self, message: impl Into<String>) {
        self.bar.set_message(message.into());
    }

    /// `n` more items finished.
    pub fn inc(&self, n: u64) {
        self.bar.inc(n);
        if let Some(lines) = &self.lines {
            let before = lines.done.fetch_add(n as usize, Ordering::SeqCst);
            for done in before + 1..=before + n as usize {
                let Some(line) = lines.line_at(done) else {
                    continue;
                };
                let mut last = lines.last.lock().unwrap_or_else(|e| e.into_inner());
                if last.elapsed() >= QUIET {
                    eprintln!("{line}");
                    *last = Instant::now();
                }
            }
        }
    }

    /// The work is over: clears the bar, or prints the summary line.
    pub fn finish_and_clear(&self) {
        self.bar.finish_and_clear();
        if let Some(lines) = &self.lines {
            eprintln!("{}", lines.summary());
        }
    }
}

impl Lines {
    /// The line to print after `done` items, if `done` is a multiple of `every` short of
    /// the end (the end has the summary); [`Progress::inc`] prints it unless the last line
    /// is more recent than [`QUIET`].
    fn line_at(&self, done: usize) -> Option<String> {
        if !done.is_multiple_of(self.every) || done >= self.len {
            return None;
        }
        let elapsed = self.started.elapsed();
        let eta = elapsed.mul_f64((self.len - done) as f64 / done as f64);
        Some(format!(
            "{}: {done}/{} {}, {} elapsed, ETA {}",
            self.label,
            self.len,
            self.unit,
            clock(elapsed),
            clock(eta)
        ))
    }

    fn summary(&self) -> String {
        format!(
            "{}: {} {} done in {}",
            self.label,
            self.done.load(Ordering::SeqCst),
            self.unit,
            clock(self.started.elapsed())
        )
    }
}

/// `m:ss`, or `h:mm:ss` from an hour.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// A bar: `label`, elapsed time, the bar, `done/len unit`, ETA and the last item's name.
fn bar(len: usize, label: &str, unit: &str) -> ProgressBar {
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{label} [{{elapsed_precise}}] {{bar:28.cyan/blue}} {{pos}}/{{len}} {unit}, ETA {{eta}} {{msg}}"
        ))
        .expect("valid template"),
    );
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_a_terminal_a_line_every_tenth_then_a_summary() {
        let progress = Progress::with_terminal(25, "B, C: train", "runs", true, false);
        let lines = progress.lines.as_ref().expect("lines off a terminal");
        assert_eq!(lines.every, 3);
        let printed: Vec<usize> = (1..=25).filter(|&d| lines.line_at(d).is_some()).collect();
        assert_eq!(printed, [3, 6, 9, 12, 15, 18, 21, 24]);
        let line = lines.line_at(3).unwrap();
        assert!(
            line.starts_with("B, C: train: 3/25 runs, 0:00 elapsed, ETA "),
            "{line}"
        );
        for _ in 0..25 {
            progress.inc(1);
        }
        assert_eq!(lines.summary(), "B, C: train: 25 runs done in 0:00");
    }

    #[test]
    fn hidden_when_not_visible_or_empty() {
        assert!(
            Progress::with_terminal(5, "x", "runs", false, false)
                .lines
                .is_none()
        );
        assert!(
            Progress::with_terminal(0, "x", "runs", true, false)
                .lines
                .is_none()
        );
        assert!(
            Progress::with_terminal(5, "x", "runs", true, true)
                .lines
                .is_none()
        );
        assert_eq!(clock(Duration::from_secs(3725)), "1:02:05");
        assert_eq!(clock(Duration::from_secs(65)), "1:05");
    }
}
