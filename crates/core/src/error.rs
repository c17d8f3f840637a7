//! The core's error type: what went wrong decides the CLI's exit status (README, "Exit
//! status"), so that a full disk is not reported as bad input.

use std::path::{Path, PathBuf};

/// An error of the core.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// What the user gave is wrong: a missing or malformed run directory, profile or map,
    /// a bad value. The message says which and why.
    #[error("{0}")]
    Input(String),
    /// Reading or writing a file failed for a reason that is not the input's fault (a full
    /// disk, permissions, an I/O error).
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An invariant of the core broke: a bug to report.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// A failed write of `path`.
    pub fn write(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            action: "write",
            path: path.to_path_buf(),
            source,
        }
    }

    /// A failed read of `path`: a file that is not there is the input's fault, any
    /// other failure (permissions, an I/O error) is not.
    pub fn read(path: &Path, source: std::io::Error) -> Error {
        if source.kind() == std::io::ErrorKind::NotFound {
            Error::Input(format!("cannot read {}: {source}", path.display()))
        } else {
            Error::Io {
                action: "read",
                path: path.to_path_buf(),
                source,
            }
        }
    }

    /// Reads a whole text file for `action` ("read profile", ...): a file that is not
    /// there or not text is the input's fault (2), any other failure (a directory,
    /// permissions, an I/O error) is not (74).
    pub fn read_text(path: &Path, action: &'static str) -> Result<String, Error> {
        std::fs::read_to_string(path).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::InvalidData => {
                Error::Input(format!("cannot {action} {}: {source}", path.display()))
            }
            _ => Error::Io {
                action,
                path: path.to_path_buf(),
                source,
            },
        })
    }

    /// This error as found in the file `path`: a message about the input is prefixed with
    /// the file's name (the parsers say the line); an I/O error already names its file.
    pub fn in_file(self, path: &Path) -> Error {
        match self {
            Error::Input(m) => Error::Input(format!("{}: {m}", path.display())),
            e => e,
        }
    }

    /// The process exit status for this error: 2 bad input, 74 I/O (`EX_IOERR`), 70
    /// internal (`EX_SOFTWARE`).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Input(_) => 2,
            Error::Io { .. } => 74,
            Error::Internal(_) => 70,
        }
    }
}

/// Messages of the functions that still return `String` describe the input.
impl From<String> for Error {
    fn from(s: String) -> Error {
        Error::Input(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_and_messages() {
        let e = Error::write(
            Path::new("/x/calls.csv"),
            std::io::Error::from_raw_os_error(28),
        );
        assert_eq!(e.exit_code(), 74);
        let m = e.to_string();
        assert!(m.starts_with("cannot write /x/calls.csv: "), "{m}");
        assert_eq!(Error::from("no spool".to_string()).exit_code(), 2);
        let gone = Error::read(Path::new("/r"), std::io::ErrorKind::NotFound.into());
        assert_eq!(gone.exit_code(), 2);
        assert!(gone.to_string().starts_with("cannot read /r: "), "{gone}");
        let eio = Error::read(Path::new("/r"), std::io::Error::from_raw_os_error(5));
        assert_eq!(eio.exit_code(), 74);
        assert_eq!(Error::Internal("x".into()).exit_code(), 70);
        let here = Error::Input("line 3: bad".into()).in_file(Path::new("/m.txt"));
        assert_eq!(here.to_string(), "/m.txt: line 3: bad");
    }

    #[test]
    fn read_text_tells_missing_and_binary_input_from_io_failures() {
        let dir = std::env::temp_dir().join(format!("pmpi-error-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let gone = Error::read_text(&dir.join("none.json"), "read profile").unwrap_err();
        assert_eq!(gone.exit_code(), 2, "{gone}");
        assert!(
            gone.to_string().starts_with("cannot read profile "),
            "{gone}"
        );
        let bin = dir.join("bin");
        std::fs::write(&bin, [0xffu8, 0xfe, 0]).unwrap();
        assert_eq!(Error::read_text(&bin, "read").unwrap_err().exit_code(), 2);
        let isdir = Error::read_text(&dir, "read profile").unwrap_err();
        assert_eq!(isdir.exit_code(), 74, "{isdir}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
