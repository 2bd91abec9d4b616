//! Claims on the runs of a shared directory, so that many worker processes (on one machine
//! or on several, over NFS) train every run exactly once.
//!
//! File layout: `<out>/claims/<run>.json`, present while a worker trains `<run>`:
//!
//! ```text
//! {"host": "node17", "pid": 4242, "token": "node17-4242-<nanos>", "heartbeat": 1763900000}
//! ```
//!
//! `heartbeat` is in Unix seconds. The protocol uses only create-new opens and renames,
//! which NFS makes atomic (no `flock`):
//!
//! - **claim**: create the file with `create_new`; whoever creates it holds the run;
//! - **heartbeat**: every [`Lease::heartbeat_every`] the holder rewrites the file (a
//!   temporary file, then a rename over it), after checking the token is still its own;
//! - **stale**: the heartbeat is older than the timeout, or the holder's pid is gone on this
//!   host. A taker renames the stale file aside (only one rename of it can succeed), checks
//!   that what it moved is the stale claim it judged, and claims again with `create_new`;
//! - **release**: the holder deletes the file once the run's `summary.json` is written.
//!
//! A run is done when its `summary.json` is complete, whatever the claims say, so a worker
//! re-checks that after claiming.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::{LabError, read_json};

/// Who holds a run, as written in its claim file.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// The holder's host name.
    pub host: String,
    /// The holder's process id on that host.
    pub pid: u32,
    /// Unique to one claim: host, pid and the claim's creation time.
    pub token: String,
    /// The last refresh, in Unix seconds.
    pub heartbeat: u64,
}

impl core::fmt::Display for Holder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.token.is_empty() {
            return f.write_str("no readable claim (not started, or another shard's run)");
        }
        let age = now().saturating_sub(self.heartbeat);
        write!(
            f,
            "host {} pid {}, heartbeat {age} s ago",
            self.host, self.pid
        )
    }
}

/// The outcome of [`Lease::acquire`].
pub enum Acquisition {
    /// This worker now holds the run.
    Acquired(Lease),
    /// Another live worker holds it.
    Held(Holder),
}

/// A held claim: refreshed by a background thread, released on drop.
pub struct Lease {
    path: PathBuf,
    token: String,
    /// Dropping it stops the heartbeat thread at once (its wait ends disconnected).
    stop: Option<Sender<()>>,
    heartbeat: Option<std::thread::JoinHandle<()>>,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// This machine's host name.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown-host".into())
}

/// Whether process `pid` runs on this host: `/proc/<pid>` exists and is not a zombie (a
/// killed worker whose parent has not reaped it yet). Without `/proc` (not Linux), every
/// pid counts as alive and only the heartbeat timeout detects a dead worker.
fn pid_alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return true;
    }
    match std::fs::read_to_string(proc.join(pid.to_string()).join("stat")) {
        // The state follows the parenthesized command name, which may itself hold ')'.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

impl Holder {
    /// A holder that could not be read.
    pub fn unknown() -> Self {
        Self {
            host: "?".into(),
            pid: 0,
            token: String::new(),
            heartbeat: now(),
        }
    }

    fn this_process() -> Self {
        let host = host_name();
        let pid = std::process::id();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Self {
            token: format!("{host}-{pid}-{nanos}"),
            host,
            pid,
            heartbeat: now(),
        }
    }

    /// Whether this claim is abandoned: no heartbeat for `timeout`, or its process is gone
    /// from this host.
    pub fn is_stale(&self, timeout: Duration) -> bool {
        let silent = now().saturating_sub(self.heartbeat) > timeout.as_secs();
        let dead_here = self.host == host_name() && !pid_alive(self.pid);
        silent || dead_here
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LabError + '_ {
    move |e| LabError::io(path, e)
}

/// Creates `path` holding `holder`, failing with `AlreadyExists` if it is there.
fn create_new(path: &Path, holder: &Holder) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(&serde_json::to_vec(holder).expect("serializable"))?;
    file.sync_all()
}

impl Lease {
    /// How often a holder refreshes its claim, for a stale `timeout`.
    pub fn heartbeat_every(timeout: Duration) -> Duration {
        (timeout / 4).clamp(Duration::from_millis(200), Duration::from_secs(30))
    }

    /// Claims run `name` in `claims_dir`, taking over a claim that is stale for `timeout`.
    ///
    /// # Errors
    /// If the claims directory cannot be written.
    pub fn acquire(
        claims_dir: &Path,
        name: &str,
        timeout: Duration,
    ) -> Result<Acquisition, LabError> {
        std::fs::create_dir_all(claims_dir).map_err(io(claims_dir))?;
        let path = claims_dir.join(format!("{name}.json"));
        let mine = Holder::this_process();
        // Two rounds: a first try, and one more after taking a stale claim aside.
        for _ in 0..2 {
            match create_new(&path, &mine) {
                Ok(()) => return Ok(Acquisition::Acquired(Self::hold(path, mine.token, timeout))),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(LabError::io(&path, e)),
            }
            // A claim half-written by its creator reads as garbage for an instant: treat
            // it as held, not as stale.
            let Ok(holder) = read_json::<Holder>(&path) else {
                continue;
            };
            if !holder.is_stale(timeout) {
                return Ok(Acquisition::Held(holder));
            }
            take_aside(&path, &holder, &mine.token)?;
        }
        Ok(Acquisition::Held(
            read_json::<Holder>(&path).unwrap_or_else(|_| Holder::unknown()),
        ))
    }

    /// The lease on the claim at `path`, with a thread that refreshes it every
    /// [`heartbeat_every`](Self::heartbeat_every) until the lease is dropped. The thread
    /// waits on a channel, not in sleeps, so a drop stops it at once: a worker releasing a
    /// run waits for no tick (up to 100 ms a run with the sleeps it replaced).
    fn hold(path: PathBuf, token: String, timeout: Duration) -> Self {
        let (stop, stopped) = mpsc::channel::<()>();
        let every = Self::heartbeat_every(timeout);
        let (p, t) = (path.clone(), token.clone());
        let heartbeat = std::thread::spawn(move || {
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                refresh(&p, &t);
            }
        });
        Self {
            path,
            token,
            stop: Some(stop),
            heartbeat: Some(heartbeat),
        }
    }
}

/// Rewrites the claim at `path` with a fresh heartbeat, if it is still `token`'s.
fn refresh(path: &Path, token: &str) {
    let Ok(mut holder) = read_json::<Holder>(path) else {
        return;
    };
    if holder.token != token {
        return;
    }
    holder.heartbeat = now();
    let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
    let json = serde_json::to_vec(&holder).expect("serializable");
    if std::fs::write(&tmp, json).is_ok() {
        std::fs::rename(&tmp, path).ok();
    }
}

/// Moves the stale claim `judged` at `path` aside. If the file moved is not that claim (a
/// faster taker replaced it meanwhile), puts it back.
fn take_aside(path: &Path, judged: &Holder, taker: &str) -> Result<(), LabError> {
    let aside = path.with_extension(format!("stale-{taker}"));
    match std::fs::rename(path, &aside) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(LabError::io(path, e)),
    }
    let moved = read_json::<Holder>(&aside).ok();
    if moved.as_ref().is_some_and(|m| m.token != judged.token) {
        // Link, not rename: it fails instead of clobbering a claim created meanwhile.
        std::fs::hard_link(&aside, path).ok();
    }
    std::fs::remove_file(&aside).ok();
    Ok(())
}

impl Drop for Lease {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(handle) = self.heartbeat.take() {
            handle.join().ok();
        }
        if read_json::<Holder>(&self.path).is_ok_and(|h| h.token == self.token) {
            std::fs::remove_file(&self.path).ok();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "addnorm-lease-{name}-{}-{}",
            std::process::id(),
            now()
        ));
        std::fs::remove_dir_all(&dir).ok();
        dir
    }

    #[test]
    fn a_second_claim_is_refused_until_the_first_is_released() {
        let dir = temp("second");
        let timeout = Duration::from_secs(60);
        let Acquisition::Acquired(lease) = Lease::acquire(&dir, "run", timeout).unwrap() else {
            panic!("the first claim succeeds");
        };
        match Lease::acquire(&dir, "run", timeout).unwrap() {
            Acquisition::Held(h) => assert_eq!(h.pid, std::process::id()),
            Acquisition::Acquired(_) => panic!("a held run was claimed twice"),
        }
        drop(lease);
        assert!(!dir.join("run.json").exists());
        assert!(matches!(
            Lease::acquire(&dir, "run", timeout).unwrap(),
            Acquisition::Acquired(_)
        ));
        std::fs::remove_dir_all(&dir).ok();
    }

    /// The heartbeat thread rewrites the claim every `heartbeat_every` while the lease
    /// lives, and stops when it is dropped: the claim then goes, and a heartbeat aged by
    /// hand stays aged.
    #[test]
    fn the_heartbeat_refreshes_the_claim_until_the_lease_is_dropped() {
        let dir = temp("heartbeat");
        // A 0.8 s timeout refreshes every 0.2 s (the lower clamp).
        let timeout = Duration::from_millis(800);
        assert_eq!(Lease::heartbeat_every(timeout), Duration::from_millis(200));
        let Acquisition::Acquired(lease) = Lease::acquire(&dir, "run", timeout).unwrap() else {
            panic!("the first claim succeeds");
        };
        let path = dir.join("run.json");
        let age = |path: &Path| {
            let mut holder: Holder = read_json(path).unwrap();
            holder.heartbeat = 1;
            std::fs::write(path, serde_json::to_vec(&holder).unwrap()).unwrap();
        };
        age(&path);
        std::thread::sleep(Duration::from_millis(700));
        let refreshed: Holder = read_json(&path).unwrap();
        assert!(refreshed.heartbeat > 1, "a live lease refreshes its claim");
        drop(lease);
        assert!(!path.exists(), "a dropped lease releases its claim");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_claim_without_heartbeat_or_of_a_dead_pid_is_taken_over() {
        let dir = temp("stale");
        std::fs::create_dir_all(&dir).unwrap();
        let timeout = Duration::from_secs(60);
        let old = Holder {
            host: "elsewhere".into(),
            pid: 1,
            token: "old".into(),
            heartbeat: now() - 120,
        };
        std::fs::write(dir.join("a.json"), serde_json::to_vec(&old).unwrap()).unwrap();
        let dead = Holder {
            host: host_name(),
            pid: u32::MAX - 1,
            token: "dead".into(),
            heartbeat: now(),
        };
        std::fs::write(dir.join("b.json"), serde_json::to_vec(&dead).unwrap()).unwrap();
        for name in ["a", "b"] {
            let Acquisition::Acquired(_lease) = Lease::acquire(&dir, name, timeout).unwrap() else {
                panic!("the stale claim on {name} is taken over");
            };
            let now_held: Holder = read_json(&dir.join(format!("{name}.json"))).unwrap();
            assert_eq!(now_held.pid, std::process::id());
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
