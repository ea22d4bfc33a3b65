//! One broker per data directory and per listener: a second `shoal` on the same directory
//! would append to the same metadata log and hand out offsets twice, and one on the same
//! port would silently take half the connections (the shards bind with SO_REUSEPORT).

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;

use crate::EngineError;

const LOCK_FILE: &str = "shoal.lock";

/// An advisory lock (flock) on the data directory, held for as long as this lives. The
/// kernel drops it when the process dies, so a crash never leaves the directory locked.
pub struct DataDirLock {
    _file: File,
}

impl DataDirLock {
    /// Takes the lock and writes this process's pid into the lock file, or refuses naming the
    /// pid of the process that holds it.
    pub fn acquire(data_dir: &Path) -> Result<DataDirLock, EngineError> {
        let path = data_dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| lock_error(&path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let holder = read_holder(&mut file);
                return Err(EngineError::InUse(format!(
                    "data directory {} is in use by another shoal ({holder}, lock file {}); \
                     stop that broker first or give this one another --data-dir",
                    data_dir.display(),
                    path.display()
                )));
            }
            Err(TryLockError::Error(e)) => return Err(lock_error(&path, e)),
        }
        file.set_len(0).map_err(|e| lock_error(&path, e))?;
        file.seek(SeekFrom::Start(0))
            .and_then(|_| writeln!(file, "{}", std::process::id()))
            .map_err(|e| lock_error(&path, e))?;
        Ok(DataDirLock { _file: file })
    }
}

fn read_holder(file: &mut File) -> String {
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    match text.trim().parse::<u32>() {
        Ok(pid) => format!("pid {pid}"),
        Err(_) => "pid unknown".to_string(),
    }
}

fn lock_error(path: &Path, e: std::io::Error) -> EngineError {
    EngineError::Config(format!("cannot lock {}: {e}", path.display()))
}

/// Refuses a listen address another process already serves. The probe binds without
/// SO_REUSEPORT, so it fails wherever any socket listens, and is closed before the shards
/// bind. (A port of 0 picks a free port and needs no check.)
pub fn check_listen_address_free(listen: SocketAddr) -> Result<(), EngineError> {
    if listen.port() == 0 {
        return Ok(());
    }
    match TcpListener::bind(listen) {
        Ok(probe) => {
            drop(probe);
            Ok(())
        }
        Err(e) if e.kind() == ErrorKind::AddrInUse => Err(EngineError::InUse(format!(
            "{listen} is already served by another process; shoal will not share a port"
        ))),
        Err(e) => Err(EngineError::Config(format!(
            "cannot listen on {listen}: {e}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_directory_is_refused_with_the_holders_pid() {
        let dir = std::env::temp_dir().join(format!("shoal-lock-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let held = DataDirLock::acquire(&dir).unwrap();
        let refused = DataDirLock::acquire(&dir)
            .err()
            .expect("second lock refused");
        let message = refused.to_string();
        assert!(
            message.contains(&format!("pid {}", std::process::id())),
            "{message}"
        );
        drop(held);
        DataDirLock::acquire(&dir).expect("free again once released");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_port_that_is_already_listened_on_is_refused() {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let refused = check_listen_address_free(addr).unwrap_err().to_string();
        assert!(refused.contains("already served"), "{refused}");
        drop(taken);
        check_listen_address_free(addr).unwrap();
    }
}
