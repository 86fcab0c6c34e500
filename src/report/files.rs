//! Atomic file output: write to a temporary file in the same directory, then rename over the
//! target, so a reader (or an interrupted run) sees the old complete file or the new one.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// An output problem: the path and what went wrong.
#[derive(Debug, thiserror::Error)]
#[error("cannot write `{path}`: {message}")]
pub struct OutputError {
    /// The file or directory.
    pub path: PathBuf,
    /// What failed.
    pub message: String,
}

impl OutputError {
    /// Wraps an I/O error for `path`.
    pub fn io(path: &Path, e: std::io::Error) -> OutputError {
        OutputError { path: path.to_path_buf(), message: e.to_string() }
    }
}

/// The temporary sibling used while `path` is being written.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Writes `bytes` to `path` atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let tmp = temp_path(path);
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        OutputError::io(path, e)
    })
}

/// Renames an already written temporary file into place.
pub fn commit_temp(tmp: &Path, path: &Path) -> Result<(), OutputError> {
    fs::rename(tmp, path).map_err(|e| {
        let _ = fs::remove_file(tmp);
        OutputError::io(path, e)
    })
}

/// Creates `dir` (and parents) and checks that it is writable before any work is done.
pub fn prepare_dir(dir: &Path) -> Result<(), OutputError> {
    fs::create_dir_all(dir).map_err(|e| OutputError::io(dir, e))?;
    let probe = dir.join(format!(".write-probe-{}", std::process::id()));
    fs::write(&probe, b"").map_err(|e| OutputError::io(dir, e))?;
    fs::remove_file(&probe).map_err(|e| OutputError::io(dir, e))
}
