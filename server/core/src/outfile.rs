//! Writing an output file so that whatever already sits at its name, or at a temporary name
//! beside it, is replaced and never followed.
//!
//! Output folders are often shared (a CI workspace, a Slurm volume), so another user may have
//! put a symlink at `report.html` or at `X.json.tmp` there. Each write goes to a temporary file
//! created exclusively under a random name (`O_CREAT | O_EXCL`, which refuses an existing
//! name, symlinks included) and is then renamed over the output, which replaces a symlink
//! there instead of writing through it. A reader never sees half a file either.

use std::io::Write;
use std::path::Path;

/// The mode of an output flymc writes: readable by others as any file the user creates (the
/// umask still applies), never executable or writable by them.
pub const MODE: u32 = 0o644;

/// Write `bytes` to `file` through an exclusively created temporary file and a rename.
pub fn write_atomically(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with_mode(file, bytes, MODE)
}

/// [`write_atomically`] with the file created with `mode` (less the umask).
pub fn write_with_mode(file: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = file
        .file_name()
        .ok_or_else(|| std::io::Error::other(format!("{} names no file", file.display())))?;
    let prefix = format!(".{}.", name.to_string_lossy());
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut tmp = builder.tempfile_in(dir)?;
    // No fsync: `run --save-paths` writes a file per path, and an interrupted flymc (not a
    // power cut) is what the rename guards against.
    tmp.write_all(bytes)?;
    // On failure the temporary file is removed when `tmp` is dropped.
    tmp.persist(file).map_err(|e| e.error)?;
    Ok(())
}

/// Copy `from` to `to` with [`write_atomically`], the copy no more readable by others than the
/// source: its group and other read bits are the source's, never more than [`MODE`]'s.
pub fn copy_atomically(from: &Path, to: &Path) -> std::io::Result<()> {
    let bytes = std::fs::read(from)?;
    write_with_mode(to, &bytes, copy_mode(from)?)
}

#[cfg(unix)]
fn copy_mode(from: &Path) -> std::io::Result<u32> {
    use std::os::unix::fs::PermissionsExt;
    let source = std::fs::metadata(from)?.permissions().mode();
    Ok(0o600 | (source & MODE & 0o044))
}

#[cfg(not(unix))]
fn copy_mode(_: &Path) -> std::io::Result<u32> {
    Ok(MODE)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(f: &Path) -> u32 {
        std::fs::symlink_metadata(f).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_symlink_at_the_output_is_replaced_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let out = d.path().join("report.html");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        write_atomically(&out, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(!std::fs::symlink_metadata(&out).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "new");
    }

    #[test]
    fn symlinks_at_temporary_names_are_left_alone() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        for name in ["X.json.tmp", ".X.json.tmp"] {
            std::os::unix::fs::symlink(&victim, d.path().join(name)).unwrap();
        }
        write_atomically(&d.path().join("X.json"), b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(left.len(), 4, "no temporary file is left behind");
    }

    #[test]
    fn a_copy_is_no_more_readable_than_its_source() {
        let d = tempfile::tempdir().unwrap();
        let secret = d.path().join("secret");
        std::fs::write(&secret, "s").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let copy = d.path().join("copy");
        copy_atomically(&secret, &copy).unwrap();
        assert_eq!(mode(&copy), 0o600);

        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o777)).unwrap();
        copy_atomically(&secret, &copy).unwrap();
        assert_eq!(
            mode(&copy) & 0o133,
            0,
            "never executable or writable by others"
        );
    }
}
