//! Reading a file a user names (workload, system file, sets file, path file, campaign, hook
//! config, a shard's report): only a regular file, and only up to a size given per kind of
//! file. Such files travel between machines and users, so `/dev/zero`, a FIFO nobody writes or
//! a file of gigabytes must be one line of refusal, not a hang or memory running out.

use std::io::Read;
use std::path::Path;

/// The largest sets file flymc reads: the analyzer's for ZooKeeper is 70 KB.
pub const MAX_SETS_BYTES: u64 = 16 << 20;
/// The largest system file, hooks file or campaign file (hunt.toml) flymc reads: real ones
/// are a few KB.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// The largest hunt output flymc reads back (a shard's `hunt.json` and `states.json`, which
/// lists every state's hash): as large as a path file may be.
pub const MAX_REPORT_BYTES: u64 = 256 << 20;

#[derive(Debug, thiserror::Error)]
pub enum BoundedError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("it is not a regular file but {0}; give a file")]
    NotRegular(&'static str),
    /// `size`: the file's size when it was known before reading.
    #[error("it is larger than the {} flymc reads of such a file{}", shown(*.max), .size.map_or(String::new(), |s| format!(" ({s} bytes)")))]
    TooLarge { max: u64, size: Option<u64> },
}

/// Messages for callers that report an [`std::io::Error`].
impl From<BoundedError> for std::io::Error {
    fn from(e: BoundedError) -> std::io::Error {
        match e {
            BoundedError::Io(e) => e,
            other => std::io::Error::new(std::io::ErrorKind::InvalidData, other.to_string()),
        }
    }
}

/// `1 MiB`, `16 MiB`, or bytes below a MiB.
pub fn shown(bytes: u64) -> String {
    if bytes >= 1 << 20 && (bytes >> 20) << 20 == bytes {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// The text of `path` if it is a regular file of at most `max` bytes. A larger file is
/// refused by its size before it is read, and one that grows past `max` as it is read.
pub fn read_text(path: &Path, max: u64) -> Result<String, BoundedError> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    // Non-blocking: opening a FIFO must not wait for a writer before it can be refused.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    let t = meta.file_type();
    if !t.is_file() {
        return Err(BoundedError::NotRegular(if t.is_dir() {
            "a folder"
        } else if t.is_fifo() {
            "a FIFO"
        } else if t.is_char_device() {
            "a character device"
        } else if t.is_block_device() {
            "a block device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "a special file"
        }));
    }
    if meta.len() > max {
        return Err(BoundedError::TooLarge {
            max,
            size: Some(meta.len()),
        });
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(BoundedError::TooLarge { max, size: None });
    }
    String::from_utf8(bytes).map_err(|_| {
        BoundedError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_folders_and_fifos_are_refused_without_reading_them() {
        let e = read_text(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert_eq!(
            e.to_string(),
            "it is not a regular file but a character device; give a file"
        );
        let dir = tempfile::tempdir().unwrap();
        let e = read_text(dir.path(), 1 << 20).unwrap_err();
        assert_eq!(
            e.to_string(),
            "it is not a regular file but a folder; give a file"
        );
        // A FIFO nobody writes: a blocking open would wait forever.
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_text(&fifo, 1 << 20).unwrap_err();
        assert_eq!(
            e.to_string(),
            "it is not a regular file but a FIFO; give a file"
        );
    }

    #[test]
    fn files_over_the_limit_are_refused_and_files_at_it_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("sets.json");
        std::fs::write(&f, "x".repeat(100)).unwrap();
        assert_eq!(read_text(&f, 100).unwrap().len(), 100);
        let e = read_text(&f, 99).unwrap_err();
        assert_eq!(
            e.to_string(),
            "it is larger than the 99 bytes flymc reads of such a file (100 bytes)"
        );
        let big = std::fs::File::create(&f).unwrap();
        // Sparse: no disk is spent, and the file is not read.
        big.set_len(MAX_SETS_BYTES + 1).unwrap();
        let e = std::io::Error::from(read_text(&f, MAX_SETS_BYTES).unwrap_err());
        assert_eq!(
            e.to_string(),
            "it is larger than the 16 MiB flymc reads of such a file (16777217 bytes)"
        );
    }
}
