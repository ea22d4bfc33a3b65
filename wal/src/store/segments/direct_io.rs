//! Whether a directory's file system takes O_DIRECT writes, asked once when the store opens:
//! where it does not (tmpfs before Linux 6.6, some FUSE and network file systems), every
//! segment write would fail, so the store writes one file per object there instead.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::entry::ALIGNMENT;

const PROBE_NAME: &str = ".direct-io-probe";

/// Writes one aligned block with O_DIRECT to a scratch file in `dir`, then removes it.
pub fn probe(dir: &Path) -> std::io::Result<()> {
    let path = dir.join(PROBE_NAME);
    let outcome = write_one_block(&path);
    let _ = std::fs::remove_file(&path);
    outcome
}

fn write_one_block(path: &Path) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)?;
    // One block at the alignment O_DIRECT needs, found inside a buffer of two.
    let align = ALIGNMENT as usize;
    let buffer = vec![0u8; 2 * align];
    let start = buffer.as_ptr().align_offset(align);
    let block = &buffer[start..start + align];
    let written = file.write(block)?;
    if written != align {
        return Err(std::io::Error::other(format!(
            "a direct write of {align} bytes wrote {written}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disk_file_system_takes_direct_writes_and_keeps_no_probe() {
        let dir = std::env::temp_dir().join(format!("shoal-direct-io-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        probe(&dir).unwrap();
        assert!(!dir.join(PROBE_NAME).exists());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
