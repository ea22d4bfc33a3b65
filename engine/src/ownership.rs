//! One broker per data directory and per listener: a second `shoal` on the same directory
//! would append to the same metadata log and hand out offsets twice, and one on the same
//! port would silently take half the connections (the shards bind with SO_REUSEPORT).

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::EngineError;

const LOCK_FILE: &str = "shoal.lock";
/// How long a bound port is waited for before it is refused.
const LINGERING_SOCKET_WAIT: Duration = Duration::from_secs(5);

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

/// Refuses a listen address another process already listens on: the shards bind with
/// SO_REUSEPORT, which would otherwise share the port with it. A broker that just exited can
/// leave its listening socket for a moment (io_uring tears it down asynchronously), so a
/// listener found is waited for a few seconds before the port is refused. Sockets of
/// connections the old process accepted do not count: the shards' binds coexist with them.
pub fn check_listen_address_free(listen: SocketAddr) -> Result<(), EngineError> {
    check_listen_address_free_within(listen, LINGERING_SOCKET_WAIT)
}

fn check_listen_address_free_within(listen: SocketAddr, wait: Duration) -> Result<(), EngineError> {
    if listen.port() == 0 {
        return Ok(()); // the kernel picks a free port
    }
    let deadline = Instant::now() + wait;
    let mut waited = false;
    while listeners_on(listen.port())
        .iter()
        .any(|ip| overlaps(*ip, listen.ip()))
    {
        if Instant::now() >= deadline {
            return Err(EngineError::InUse(format!(
                "{listen} is already served by another process; shoal will not share a port"
            )));
        }
        if !waited {
            tracing::info!(%listen, "another socket listens on the port; waiting for it to go");
            waited = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// Whether listeners on `a` and `b` would take the same connections.
fn overlaps(a: IpAddr, b: IpAddr) -> bool {
    a.is_unspecified() || b.is_unspecified() || a == b
}

/// The addresses of every TCP socket in the LISTEN state on `port`, from the kernel's
/// socket tables.
fn listeners_on(port: u16) -> Vec<IpAddr> {
    let mut found = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let mut fields = line.split_whitespace();
            let (Some(local), Some(state)) = (fields.nth(1), fields.nth(1)) else {
                continue;
            };
            let Some((address, port_hex)) = local.split_once(':') else {
                continue;
            };
            let listening = state == LISTEN_STATE;
            if listening && u16::from_str_radix(port_hex, 16) == Ok(port) {
                if let Some(ip) = parse_proc_address(address) {
                    found.push(ip);
                }
            }
        }
    }
    found
}

/// TCP_LISTEN as /proc/net/tcp prints it.
const LISTEN_STATE: &str = "0A";

/// An address as /proc/net/tcp prints it: the raw bytes as native-endian 32-bit words.
fn parse_proc_address(hex: &str) -> Option<IpAddr> {
    let words: Option<Vec<[u8; 4]>> = (0..hex.len() / 8)
        .map(|i| {
            let word = u32::from_str_radix(hex.get(i * 8..i * 8 + 8)?, 16).ok()?;
            Some(word.to_ne_bytes())
        })
        .collect();
    let bytes: Vec<u8> = words?.concat();
    match bytes.len() {
        4 => Some(IpAddr::from(<[u8; 4]>::try_from(bytes).ok()?)),
        16 => Some(IpAddr::from(<[u8; 16]>::try_from(bytes).ok()?)),
        _ => None,
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

    use std::net::TcpListener;

    #[test]
    fn kernel_socket_table_addresses_parse() {
        let loopback = IpAddr::from([127, 0, 0, 1]);
        let word = u32::from_ne_bytes([127, 0, 0, 1]);
        assert_eq!(parse_proc_address(&format!("{word:08X}")), Some(loopback));
        assert_eq!(
            parse_proc_address(&"0".repeat(32)),
            Some(IpAddr::from([0u8; 16]))
        );
        assert_eq!(parse_proc_address("nothex!!"), None);
    }

    #[test]
    fn a_port_that_is_already_listened_on_is_refused() {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let wait = Duration::from_millis(200);
        let refused = check_listen_address_free_within(addr, wait).unwrap_err();
        assert!(refused.to_string().contains("already served"), "{refused}");
        drop(taken);
        check_listen_address_free_within(addr, wait).unwrap();
    }
}
