//! Atomic file output: write to a temporary file in the same directory, then rename over the
//! target, so a reader (or an interrupted run) sees the old complete file or the new one.

use crate::scenario::input_file::{self, InputError, Limit};
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

/// The file in every output directory that lists what retrystorm wrote there.
pub const MANIFEST: &str = "manifest.json";

/// Format tag of [`MANIFEST`].
const MANIFEST_FORMAT: &str = "retrystorm-manifest/1";

/// Why an output directory cannot be used, or a write into it failed.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// The directory is not the run's to write (bad input: exit 2).
    #[error("{0}")]
    Refused(String),
    /// It could not be created or written (exit 1 when work was already done).
    #[error("{0}")]
    Io(#[from] OutputError),
}

/// An output directory claimed for one run: it holds nothing retrystorm did not write (or the
/// user said `--force`), and [`Claim::finish`] records what this run wrote in `MANIFEST` and
/// removes the files a previous manifest named that this run did not write (never anything else).
#[derive(Debug)]
pub struct Claim {
    dir: PathBuf,
    previous: Vec<String>,
    /// Files of the previous manifest this run keeps (re-rendering keeps the data files).
    keep: Vec<String>,
    /// Whether to write a manifest (not when re-rendering a directory that has none).
    manifest: bool,
}

/// Is `name` one of our temporary files (`.NAME.tmp-PID` or `.STEM.tmp-PID.png`)?
fn is_temporary(name: &str) -> bool {
    name.starts_with('.') && name.contains(".tmp-")
}

/// Largest manifest read, in bytes: far beyond the file names any command writes.
const MANIFEST_MAX_BYTES: u64 = 16 << 20;

/// The file names listed in `dir`'s manifest (None: no manifest; Err: one we did not write).
pub fn read_manifest(dir: &Path) -> Result<Option<Vec<String>>, String> {
    let path = dir.join(MANIFEST);
    // Through `input_file`: a manifest that is a FIFO would block the command, one that links
    // to `/dev/zero` would grow its memory without bound.
    let text = match input_file::read_text(&path, Limit { bytes: MANIFEST_MAX_BYTES, holder: "a manifest" }) {
        Ok(text) => text,
        Err(InputError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read `{}`: {e}", path.display())),
    };
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|_| format!("`{}` is not a retrystorm manifest (not JSON)", path.display()))?;
    if value.get("format").and_then(serde_json::Value::as_str) != Some(MANIFEST_FORMAT) {
        return Err(format!("`{}` is not a retrystorm manifest (no format `{MANIFEST_FORMAT}`)", path.display()));
    }
    let files = value
        .get("files")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| format!("`{}` is not a retrystorm manifest (no `files` list)", path.display()))?;
    // Only plain names in this directory: a manifest never makes us touch anything elsewhere.
    Ok(Some(
        files.iter().filter_map(serde_json::Value::as_str).filter(|n| is_plain_name(n)).map(str::to_string).collect(),
    ))
}

/// A file name with no directory part, not `.`/`..` and not the manifest itself.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name != MANIFEST
        && !name.contains(['/', '\\'])
        && !name.chars().any(char::is_control)
}

impl Claim {
    /// Claims `dir` for a run: creates it, checks that it is writable and that everything in it
    /// was written by retrystorm (its manifest's files, temporaries, sub-directories that are
    /// retrystorm output directories themselves), unless `force`.
    pub fn new(dir: &Path, force: bool) -> Result<Claim, ClaimError> {
        if dir.exists() && !dir.is_dir() {
            return Err(ClaimError::Refused(format!(
                "--out `{}` is a file, not a directory; give a directory path",
                dir.display()
            )));
        }
        prepare_dir(dir)?;
        let previous = read_manifest(dir).map_err(|m| ClaimError::Refused(format!("{m}; {REFUSE_HINT}")))?;
        let known = previous.clone().unwrap_or_default();
        if !force {
            let entries = fs::read_dir(dir).map_err(|e| OutputError::io(dir, e))?;
            let mut foreign: Vec<String> = Vec::new();
            for entry in entries {
                let entry = entry.map_err(|e| OutputError::io(dir, e))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let path = entry.path();
                let ours = name == MANIFEST || is_temporary(&name) || known.contains(&name) || is_output_tree(&path, 3);
                if !ours {
                    foreign.push(name);
                }
            }
            if !foreign.is_empty() {
                foreign.sort();
                let shown: Vec<String> = foreign.iter().take(3).map(|n| format!("`{}`", n.escape_debug())).collect();
                let more = if foreign.len() > 3 { format!(" and {} more", foreign.len() - 3) } else { String::new() };
                return Err(ClaimError::Refused(format!(
                    "output directory `{}` holds files retrystorm did not write ({}{more}); {REFUSE_HINT}",
                    dir.display(),
                    shown.join(", "),
                )));
            }
        }
        Ok(Claim { dir: dir.to_path_buf(), previous: known, keep: Vec::new(), manifest: true })
    }

    /// Re-opens a finished run's directory to re-render its charts and report (`plot`): the
    /// manifest's other files are kept; a directory without a manifest gets none.
    pub fn reopen(dir: &Path) -> Result<Claim, ClaimError> {
        let previous =
            read_manifest(dir).map_err(|m| ClaimError::Refused(format!("{m}; rerun the run to rewrite it")))?;
        let manifest = previous.is_some();
        let previous = previous.unwrap_or_default();
        let rendered = |n: &String| n.ends_with(".svg") || n.ends_with(".png") || n == "report.html";
        let keep = previous.iter().filter(|n| !rendered(n)).cloned().collect();
        Ok(Claim { dir: dir.to_path_buf(), previous, keep, manifest })
    }

    /// The claimed directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// After a complete write of `written`: records them in the manifest, then removes the files
    /// the previous manifest named that this run did not write.
    pub fn finish(&self, written: &[PathBuf]) -> Result<(), OutputError> {
        let mut names = self.names(written);
        names.extend(self.keep.iter().cloned());
        if !self.manifest {
            return Ok(());
        }
        self.write_manifest(&names)?;
        for stale in self.previous.iter().filter(|p| !names.contains(p)) {
            let path = self.dir.join(stale);
            if path.is_file() {
                fs::remove_file(&path).map_err(|e| OutputError::io(&path, e))?;
            }
        }
        Ok(())
    }

    /// After a failed write: the manifest names what this run completed plus what the previous
    /// run left (nothing is removed), so a rerun may use the directory; returns the complete
    /// files' names for the message.
    pub fn abandon(&self, written: &[PathBuf]) -> Vec<String> {
        let done = self.names(written);
        let mut all = done.clone();
        all.extend(self.previous.iter().filter(|p| !done.contains(p)).cloned());
        if self.manifest {
            let _ = self.write_manifest(&all);
        }
        done
    }

    fn names(&self, written: &[PathBuf]) -> Vec<String> {
        let mut names: Vec<String> = written
            .iter()
            .filter(|p| p.parent() == Some(self.dir.as_path()))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .filter(|n| is_plain_name(n))
            .collect();
        names.dedup();
        names
    }

    fn write_manifest(&self, names: &[String]) -> Result<(), OutputError> {
        let mut sorted = names.to_vec();
        sorted.sort();
        sorted.dedup();
        let manifest = serde_json::json!({
            "format": MANIFEST_FORMAT,
            "version": env!("CARGO_PKG_VERSION"),
            "files": sorted,
        });
        let mut text = serde_json::to_string_pretty(&manifest).expect("JSON values serialise");
        text.push('\n');
        write_atomic(&self.dir.join(MANIFEST), text.as_bytes())
    }
}

/// Is `path` a directory retrystorm wrote (it has a manifest), or one holding only such
/// directories (the default `sweep/` holding shard directories), looking `depth` levels down?
fn is_output_tree(path: &Path, depth: u32) -> bool {
    if path.is_symlink() || !path.is_dir() {
        return false;
    }
    if path.join(MANIFEST).is_file() {
        return true;
    }
    depth > 0
        && fs::read_dir(path)
            .is_ok_and(|entries| entries.take(10_000).all(|e| e.is_ok_and(|e| is_output_tree(&e.path(), depth - 1))))
}

const REFUSE_HINT: &str =
    "choose an empty or new --out, or pass --force to write there anyway (files retrystorm did not write are left alone)";

/// The message of a write that failed after `complete` files were written.
pub fn partial_failure(error: &OutputError, complete: &[String]) -> String {
    if complete.is_empty() {
        return format!("{error}; no file was completed");
    }
    let shown: Vec<&str> = complete.iter().take(8).map(String::as_str).collect();
    let more = if complete.len() > 8 { format!(" and {} more", complete.len() - 8) } else { String::new() };
    format!(
        "{error}; {} file(s) are complete ({}{more}, listed in {MANIFEST}), the others are missing or from the previous run",
        complete.len(),
        shown.join(", ")
    )
}
