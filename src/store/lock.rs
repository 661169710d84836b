//! One writer per state directory. Two Emacs sessions of one user (a daemon and an
//! `emacs -nw`, say) on the same directory would both append to one log and rewrite one
//! approvals queue; the second to open waits instead ([`StateLock::acquire`] says who holds
//! it). The lock is the kernel's (`flock` on `store.lock`): a session that dies, even by
//! SIGKILL, lets go of it with its file descriptors, so no stale lock is ever left behind to
//! be guessed about.

use super::error::{open_state_file, Result, StoreError};
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// File name of the lock inside the state directory.
pub const LOCK_NAME: &str = "store.lock";

/// The state directory, held: released when dropped (or when the process dies).
#[derive(Debug)]
pub struct StateLock {
    dir: PathBuf,
    _file: File,
}

impl StateLock {
    /// Take the lock of `dir` (created if need be), or [`StoreError::Locked`] naming the
    /// session that holds it, as it wrote itself into the file.
    pub fn acquire(dir: &Path) -> Result<StateLock> {
        let path = dir.join(LOCK_NAME);
        let io = StoreError::io_on(&path);
        let mut file = open_state_file(&path)?;
        // SAFETY: flock on a descriptor this function owns, with no pointers involved.
        let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        let failure = (locked != 0).then(std::io::Error::last_os_error);
        match failure {
            None => {}
            Some(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                return Err(StoreError::Locked {
                    dir: dir.to_path_buf(),
                    holder: holder.trim().chars().take(200).collect(),
                });
            }
            Some(e) => return Err(io(e)),
        }
        // Who holds it, for the message the other session shows; the lock is the flock,
        // not this text, so a stale text from a dead session misleads no one.
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = write!(file, "{}", holder_description());
        let _ = file.flush();
        Ok(StateLock {
            dir: dir.to_path_buf(),
            _file: file,
        })
    }

    /// The directory held.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// This session as another one is told of it: the process, its host, since when.
fn holder_description() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "this machine".into());
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!(
        "Emacs process {} on {host}, since {since} (seconds since 1970)",
        std::process::id()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = StateLock::acquire(dir.path()).unwrap();
        assert_eq!(first.dir(), dir.path());
        // flock locks belong to open files, so a second open in this process conflicts
        // as another process's would.
        match StateLock::acquire(dir.path()) {
            Err(StoreError::Locked { holder, .. }) => {
                assert!(
                    holder.contains(&format!("process {}", std::process::id())),
                    "{holder}"
                );
            }
            other => panic!("the second lock was not refused: {other:?}"),
        }
        drop(first);
        StateLock::acquire(dir.path()).expect("free again once the first is dropped");
    }
}
