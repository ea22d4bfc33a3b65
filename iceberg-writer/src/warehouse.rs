//! The warehouse the tables' files are kept in: a local directory (`file://` locations) or an
//! S3 bucket (`s3://bucket/key`). Files are read back bounded and stored durably: locally
//! written beside, synced and renamed into place; on S3 a PUT is whole when it is answered.

use std::path::{Path, PathBuf};

use shoal_iceberg::append::Object;
use shoal_wal::store::s3::S3Config;

use super::s3_client::BlockingS3;

/// Where the warehouse is, as the broker's settings give it.
#[derive(Debug, Clone)]
pub enum WarehouseSetup {
    Local(PathBuf),
    /// A bucket (`s3.bucket`), and the prefix tables go under in it.
    S3 {
        s3: Box<S3Config>,
        prefix: String,
    },
}

pub enum Warehouse {
    Local(PathBuf),
    S3 {
        client: Box<BlockingS3>,
        prefix: String,
    },
}

/// Where one location is: a local path, or a key in the bucket the client reaches.
enum Place<'a> {
    Path(PathBuf),
    Key(&'a BlockingS3, &'a str),
}

impl Warehouse {
    pub fn open(setup: &WarehouseSetup) -> Result<Warehouse, String> {
        Ok(match setup {
            WarehouseSetup::Local(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                Warehouse::Local(dir.clone())
            }
            WarehouseSetup::S3 { s3, prefix } => Warehouse::S3 {
                client: Box::new(BlockingS3::new(s3)?),
                prefix: prefix.trim_matches('/').to_string(),
            },
        })
    }

    /// Where a new table's files go.
    pub fn table_location(&self, namespace: &str, table: &str) -> String {
        match self {
            Warehouse::Local(dir) => {
                format!("file://{}", dir.join(namespace).join(table).display())
            }
            Warehouse::S3 { client, prefix } => {
                let bucket = client.bucket_name();
                match prefix.is_empty() {
                    true => format!("s3://{bucket}/{namespace}/{table}"),
                    false => format!("s3://{bucket}/{prefix}/{namespace}/{table}"),
                }
            }
        }
    }

    fn place<'a>(&'a self, location: &'a str) -> Result<Place<'a>, String> {
        match self {
            Warehouse::Local(_) => location
                .strip_prefix("file://")
                .map(|path| Place::Path(PathBuf::from(path)))
                .ok_or_else(|| format!("{location}: not in this warehouse (file://)")),
            Warehouse::S3 { client, .. } => location
                .strip_prefix("s3://")
                .and_then(|rest| rest.split_once('/'))
                .filter(|(bucket, _)| *bucket == client.bucket_name())
                .map(|(_, key)| Place::Key(client, key))
                .ok_or_else(|| {
                    format!(
                        "{location}: not in this warehouse (s3://{}/)",
                        client.bucket_name()
                    )
                }),
        }
    }

    /// The file at `location`, refused past `max_bytes`.
    pub fn read(&self, location: &str, max_bytes: u64) -> Result<Vec<u8>, String> {
        match self.place(location)? {
            Place::Path(path) => read_file(&path, max_bytes),
            Place::Key(client, key) => client.get(key, max_bytes),
        }
    }

    /// Stores each object of a commit durably, in order: the metadata last, so the catalog
    /// never names a file that is not whole.
    pub fn store(&self, objects: &[Object]) -> Result<(), String> {
        for object in objects {
            match self.place(&object.location)? {
                Place::Path(path) => write_durably(&path, &object.bytes)
                    .map_err(|e| format!("{}: {e}", path.display()))?,
                Place::Key(client, key) => client.put(key, &object.bytes)?,
            }
        }
        Ok(())
    }

    /// Deletes files no table names any more; one that stays behind costs only its space.
    pub fn delete<'a>(&self, locations: impl IntoIterator<Item = &'a String>) {
        for location in locations {
            let removed = self.place(location).and_then(|place| match place {
                Place::Path(path) => {
                    std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))
                }
                Place::Key(client, key) => client.delete(key),
            });
            if let Err(why) = removed {
                tracing::warn!(%why, "table writer: a file no table names was not deleted");
            }
        }
    }
}

fn read_file(path: &Path, max_bytes: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!("{}: over {max_bytes} bytes", path.display()));
    }
    Ok(bytes)
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
