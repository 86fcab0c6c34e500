//! Reading a file the user named: the one check every such file goes through.
//!
//! Scenario files, the data files a scenario names (traces, histograms, imported configs), the
//! files `plot` reads back from a run directory, the shard files `merge` joins and `init
//! --from` inputs are opened here and nowhere else. A file must be a regular file (a FIFO
//! would block the open or the read forever, `/dev/zero` never ends, a directory is an
//! unhelpful OS error) of at most the caller's size limit; the metadata is checked before the
//! file is opened, and the read itself stops one byte past the limit, so a file whose size the
//! system misreports (or that grows while read) still cannot make memory grow without bound.
//! Callers add their own hint (what the file should have been) to the reason given here.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Why a user's file was not read, worded to follow its name: `` `x`: it is a directory ``.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The path is a directory.
    #[error("it is a directory")]
    Directory,
    /// A device, FIFO or socket.
    #[error("it is not a regular file (a device, FIFO or socket)")]
    NotRegular,
    /// More than the caller's limit (by its metadata, or by what reading it gave).
    #[error("it is {size} bytes, more than the {limit} {holder} may have")]
    TooBig {
        /// Its size, or at least how much of it was read.
        size: u64,
        /// The caller's limit.
        limit: u64,
        /// Who the limit is for, e.g. "a scenario".
        holder: &'static str,
    },
    /// The system's error (missing, permission denied, …).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// `read_text` of bytes that are not UTF-8.
    #[error("stream did not contain valid UTF-8")]
    NotUtf8,
}

impl InputError {
    /// Is this about what the path is (missing, a directory, a special file, too big), where a
    /// hint naming the expected file helps, rather than a permission or a read failure?
    pub fn is_wrong_file(&self) -> bool {
        match self {
            InputError::Io(e) => e.kind() == std::io::ErrorKind::NotFound,
            InputError::NotUtf8 => false,
            InputError::Directory | InputError::NotRegular | InputError::TooBig { .. } => true,
        }
    }
}

/// A file's limit: at most `bytes`, for messages `holder` ("a scenario", "a shard's file").
#[derive(Clone, Copy, Debug)]
pub struct Limit {
    /// The most bytes the file may have.
    pub bytes: u64,
    /// Who may have that many, for the message: "more than the N {holder} may have".
    pub holder: &'static str,
}

/// A regular file opened for reading: at most its limit's bytes come out of it, the byte after
/// them is a read error ([`InputError::TooBig`] as an I/O error of kind `InvalidData`).
#[derive(Debug)]
pub struct Bounded {
    file: std::io::Take<File>,
    limit: Limit,
    read: u64,
}

impl Bounded {
    fn too_big(&self) -> InputError {
        InputError::TooBig { size: self.read, limit: self.limit.bytes, holder: self.limit.holder }
    }
}

impl Read for Bounded {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read(buf)?;
        self.read += n as u64;
        if self.read > self.limit.bytes {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, self.too_big().to_string()));
        }
        Ok(n)
    }
}

/// Opens `path` after checking (before opening it) that it is a regular file of at most
/// `limit.bytes` bytes.
pub fn open(path: &Path, limit: Limit) -> Result<Bounded, InputError> {
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        return Err(InputError::Directory);
    }
    if !meta.is_file() {
        return Err(InputError::NotRegular);
    }
    if meta.len() > limit.bytes {
        return Err(InputError::TooBig { size: meta.len(), limit: limit.bytes, holder: limit.holder });
    }
    let file = File::open(path)?;
    Ok(Bounded { file: file.take(limit.bytes.saturating_add(1)), limit, read: 0 })
}

/// The whole text of `path`: [`open`], read to the end (stopping one byte past the limit), UTF-8.
pub fn read_text(path: &Path, limit: Limit) -> Result<String, InputError> {
    let mut reader = open(path, limit)?;
    let mut bytes = Vec::new();
    if let Err(e) = reader.read_to_end(&mut bytes) {
        return Err(if reader.read > limit.bytes { reader.too_big() } else { InputError::Io(e) });
    }
    String::from_utf8(bytes).map_err(|_| InputError::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Limit = Limit { bytes: 8, holder: "a test file" };

    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = |name: &str| dir.path().join(name);
        std::fs::write(path("eight"), b"12345678").expect("write");
        std::fs::write(path("nine"), b"123456789").expect("write");
        std::fs::write(path("latin1"), b"caf\xe9").expect("write");
        assert_eq!(read_text(&path("eight"), LIMIT).expect("8 bytes are allowed"), "12345678");
        let nine = read_text(&path("nine"), LIMIT).expect_err("9 bytes are not");
        assert_eq!(nine.to_string(), "it is 9 bytes, more than the 8 a test file may have");
        assert_eq!(read_text(dir.path(), LIMIT).expect_err("a directory").to_string(), "it is a directory");
        let zero = read_text(Path::new("/dev/zero"), LIMIT).expect_err("a device");
        assert_eq!(zero.to_string(), "it is not a regular file (a device, FIFO or socket)");
        assert!(matches!(read_text(&path("latin1"), LIMIT), Err(InputError::NotUtf8)));
        let missing = read_text(&path("missing"), LIMIT).expect_err("missing");
        assert!(matches!(&missing, InputError::Io(e) if e.kind() == std::io::ErrorKind::NotFound));
        assert!(missing.is_wrong_file() && nine.is_wrong_file() && !InputError::NotUtf8.is_wrong_file());
    }

    /// A file that grows after its size was checked (as one whose size the system misreports)
    /// stops at the limit's next byte: the reader refuses it instead of returning a cut text.
    #[test]
    fn the_read_stops_one_byte_past_the_limit_whatever_the_metadata_said() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("grows");
        std::fs::write(&path, b"1234").expect("write");
        let mut reader = open(&path, LIMIT).expect("4 bytes pass the check");
        std::fs::write(&path, b"1234567890").expect("grow it");
        let mut bytes = Vec::new();
        let e = reader.read_to_end(&mut bytes).expect_err("past the limit");
        assert_eq!(e.to_string(), "it is 9 bytes, more than the 8 a test file may have");
        assert_eq!(reader.read, 9, "it read one byte past the limit, no more");
    }
}
