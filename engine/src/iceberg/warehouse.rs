//! The warehouse's files, by their `file://` locations: read back bounded, stored durably
//! (written beside, synced, renamed into place), deleted.

use std::path::{Path, PathBuf};

use shoal_iceberg::append::Append;

/// The path a file:// location names.
fn path_of(location: &str) -> Result<PathBuf, String> {
    location
        .strip_prefix("file://")
        .map(PathBuf::from)
        .ok_or_else(|| format!("{location}: only file:// locations are read and written so far"))
}

/// The file at `location`, refused past `max_bytes`.
pub fn read(location: &str, max_bytes: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let path = path_of(location)?;
    let file = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!("{}: over {max_bytes} bytes", path.display()));
    }
    Ok(bytes)
}

/// Stores each object of a commit durably, in order: the metadata last, so the catalog never
/// names a file that is not whole.
pub fn store(planned: &Append) -> Result<(), String> {
    for object in &planned.objects {
        let path = path_of(&object.location)?;
        write_durably(&path, &object.bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

fn write_durably(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let partial = path.with_extension("partial");
    let mut file = std::fs::File::create(&partial)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&partial, path)?;
    std::fs::File::open(dir)?.sync_all()
}

/// Deletes files no table names any more; one that stays behind costs only its space.
pub fn delete<'a>(locations: impl IntoIterator<Item = &'a String>) {
    for location in locations {
        let removed = path_of(location).and_then(|path| {
            std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))
        });
        if let Err(why) = removed {
            tracing::warn!(%why, "table writer: a file no table names was not deleted");
        }
    }
}
