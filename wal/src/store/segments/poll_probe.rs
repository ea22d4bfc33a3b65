//! Whether a device takes polled I/O (io_uring's IOPOLL), asked with a read that reaches it.
//!
//! glommio asks with a read at the start of the first DMA file each thread opens on a device,
//! and keeps the answer for the thread. The first file a segment writer opens is a new, empty
//! segment: opened write-only, that read fails with EBADF, which glommio logs as an ERROR (on
//! every start of a broker); opened readable, it reads past the end, which succeeds without
//! touching the device, so polled I/O would be taken as working where it is not and every
//! later read would fail with EOPNOTSUPP. So before its first new segment, each thread opens
//! a scratch file holding one written block: glommio's read of it reaches the device, and the
//! answer it keeps is the device's own.

use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use glommio::io::{DmaFile, OpenOptions};

use super::entry::ALIGNMENT;

thread_local! {
    static PROBED: Cell<bool> = const { Cell::new(false) };
}

/// Scratch files of threads probing at once get names of their own.
static NEXT_PROBE: AtomicU64 = AtomicU64::new(0);

/// Has glommio ask `dir`'s device, once per thread; a probe that cannot run leaves glommio
/// to ask on the next file, as before.
pub async fn probe_once(dir: &Path) {
    if PROBED.replace(true) {
        return;
    }
    let number = NEXT_PROBE.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!(".poll-probe-{}-{number}", std::process::id()));
    let probed = async {
        let file = (OpenOptions::new().write(true).create(true).truncate(true))
            .buffered_open(&path)
            .await?;
        file.write_at(vec![0u8; ALIGNMENT as usize], 0).await?;
        // Written through to the device, so the direct read below is not served from memory.
        file.fdatasync().await?;
        file.close().await?;
        DmaFile::open(&path).await?.close().await
    }
    .await;
    let _ = glommio::io::remove(&path).await;
    if let Err(e) = probed {
        tracing::debug!(dir = %dir.display(), error = %e, "could not probe the device for polled I/O");
    }
}
