//! The loopback TCP baseline: connections blasting 1 MiB writes at an in-process sink, to
//! measure what the machine's network stack and CPUs allow before any broker work.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::BenchError;

pub fn run(
    connections: usize,
    duration: Duration,
    cpus: &[usize],
) -> Result<(u64, Duration), BenchError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(BenchError::Io)?;
    let addr = listener.local_addr().map_err(BenchError::Io)?;
    let mut sinks = Vec::new();
    for i in 0..connections {
        let (mut conn, _) = {
            let client = TcpStream::connect(addr).map_err(BenchError::Io)?;
            let accepted = listener.accept().map_err(BenchError::Io)?;
            sinks.push(std::thread::spawn({
                let cpus = cpus.to_vec();
                let mut sink = accepted.0;
                move || {
                    crate::pin(&cpus, i * 2 + 1);
                    let mut buf = vec![0u8; 1 << 20];
                    let mut total = 0u64;
                    while let Ok(n) = sink.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        total += n as u64;
                    }
                    total
                }
            }));
            (client, ())
        };
        let cpus = cpus.to_vec();
        std::thread::spawn(move || {
            crate::pin(&cpus, i * 2);
            let buf = vec![7u8; 1 << 20];
            let deadline = Instant::now() + duration;
            while Instant::now() < deadline {
                if conn.write_all(&buf).is_err() {
                    break;
                }
            }
        });
    }
    let started = Instant::now();
    let mut total = 0;
    for sink in sinks {
        total += sink.join().map_err(|_| BenchError::Thread)?;
    }
    Ok((total, started.elapsed()))
}
