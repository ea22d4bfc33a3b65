//! `shoal status`: what a running broker's `/health` and `/ready` say, for an operator's
//! shell. Exit status: 0 ready, 1 up but not ready, 2 no answer.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(5);
const ANSWER_MAX_BYTES: u64 = 64 << 10;

/// Prints the broker's health and readiness; returns the exit status.
pub fn status(metrics: SocketAddr) -> i32 {
    let health = match get(metrics, "/health") {
        Ok((_, body)) => body,
        Err(e) => {
            println!("health: no answer from {metrics}: {e}");
            return 2;
        }
    };
    println!("health: {}", health.trim());
    match get(metrics, "/ready") {
        Ok((200, body)) => {
            println!("ready: {}", body.trim());
            0
        }
        Ok((_, body)) => {
            println!("ready: {}", body.trim());
            1
        }
        Err(e) => {
            println!("ready: no answer: {e}");
            2
        }
    }
}

/// (status code, body) of a GET.
fn get(address: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&address, TIMEOUT)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = String::new();
    stream.take(ANSWER_MAX_BYTES).read_to_string(&mut answer)?;
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "not an HTTP answer");
    let (head, body) = answer.split_once("\r\n\r\n").ok_or_else(bad)?;
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(bad)?;
    Ok((code, body.to_string()))
}
