//! Writing a file so that no reader ever sees it half-written: the bytes go
//! to a temporary file in the same directory, which is then renamed over
//! the target (a rename within one file system is atomic).

use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let fail = || format!("cannot write {}", path.display());
    let mut builder = tempfile::Builder::new();
    builder.prefix(".hwwfc-").suffix(".tmp");
    // A temporary file is private (0600); the result is an ordinary file.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o644));
    }
    let mut tmp = builder.tempfile_in(dir).with_context(fail)?;
    tmp.write_all(bytes).with_context(fail)?;
    tmp.as_file().sync_all().with_context(fail)?;
    tmp.persist(path).map_err(|e| e.error).with_context(fail)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        write(&path, b"one").unwrap();
        write(&path, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert!(write(&dir.path().join("missing/out.json"), b"x").is_err());
    }
}
