//! How many connections the broker keeps, in all and per client address (Kafka's
//! `max.connections` and `max.connections.per.ip`). Shared by every shard's listener; taken
//! once per connection, never on the request path. Both limits may change at run time
//! (dynamic broker configs): connections already open stay; the next is measured anew.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

pub struct ConnectionLimits {
    max_total: AtomicUsize,
    max_per_ip: AtomicUsize,
    total: AtomicUsize,
    per_ip: Mutex<HashMap<IpAddr, usize>>,
}

/// One admitted connection; dropping it makes room for another.
pub struct Admitted {
    limits: Arc<ConnectionLimits>,
    ip: IpAddr,
}

impl ConnectionLimits {
    pub fn new(max_total: usize, max_per_ip: usize) -> Arc<ConnectionLimits> {
        Arc::new(ConnectionLimits {
            max_total: AtomicUsize::new(max_total),
            max_per_ip: AtomicUsize::new(max_per_ip),
            total: AtomicUsize::new(0),
            per_ip: Mutex::new(HashMap::new()),
        })
    }

    /// Room for one more connection from `ip`, or why not.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Admitted, &'static str> {
        let mut per_ip = self.per_ip.lock().unwrap_or_else(|e| e.into_inner());
        let from_ip = per_ip.entry(ip).or_insert(0);
        if *from_ip >= self.max_per_ip.load(Ordering::Relaxed) {
            return Err("max_connections_per_ip");
        }
        if self.total.load(Ordering::Relaxed) >= self.max_total.load(Ordering::Relaxed) {
            return Err("max_connections");
        }
        *from_ip += 1;
        self.total.fetch_add(1, Ordering::Relaxed);
        Ok(Admitted {
            limits: self.clone(),
            ip,
        })
    }

    /// New limits for the connections to come.
    pub fn set(&self, max_total: usize, max_per_ip: usize) {
        self.max_total.store(max_total, Ordering::Relaxed);
        self.max_per_ip.store(max_per_ip, Ordering::Relaxed);
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut per_ip = self.limits.per_ip.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = per_ip.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                per_ip.remove(&self.ip);
            }
        }
        self.limits.total.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_counted_in_all_and_per_address() {
        let limits = ConnectionLimits::new(3, 2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let first = limits.admit(a).unwrap();
        let _second = limits.admit(a).unwrap();
        assert_eq!(limits.admit(a).err(), Some("max_connections_per_ip"));
        let _third = limits.admit(b).unwrap();
        assert_eq!(limits.admit(b).err(), Some("max_connections"));
        drop(first);
        let _again = limits.admit(a).unwrap();
        // Raised per address only: the total is full.
        limits.set(3, 3);
        assert_eq!(limits.admit(a).err(), Some("max_connections"));
        limits.set(4, 3);
        assert!(limits.admit(a).is_ok());
    }
}
