//! Files at paths the work tree's own content names: a check's report (the configuration
//! names the path, the check writes the file) and the source files a report's findings
//! point at. The code under review controls both, so such a file is read (or, for a stale
//! report, removed) only when the path leads to a regular file inside the work tree.
//!
//! - The file itself must not be a symbolic link and must be a regular file: `/dev/zero`
//!   would be read forever, and opening a FIFO would block. It is opened with
//!   `O_NOFOLLOW | O_NONBLOCK` and checked on the open descriptor.
//! - Its directory must resolve to a place under the work tree's root: symbolic links to
//!   directories are followed only while they stay inside. The directory is then opened
//!   one component at a time from the root with `O_NOFOLLOW`, so a directory swapped for
//!   a link after it was resolved cannot lead outside either.

use std::ffi::{CString, OsStr};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

/// Why a file at a named path was not opened.
#[derive(Debug)]
pub enum Refusal {
    /// The path's last component is a symbolic link.
    Link,
    /// Not a regular file: "a FIFO", "a device", ...
    NotRegular(&'static str),
    /// The path leads out of the work tree; the text says through what.
    Outside(String),
    Io(io::Error),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Link => f.write_str("it is a symbolic link (only regular files are read)"),
            Refusal::NotRegular(what) => write!(f, "it is {what}, not a regular file"),
            Refusal::Outside(why) => f.write_str(why),
            Refusal::Io(e) => write!(f, "{e}"),
        }
    }
}

/// `path` opened for reading if it is a regular file and not a symbolic link; its
/// directories are followed wherever they lead (the caller chose the path).
pub fn open_regular(path: &Path) -> Result<File, Refusal> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(link_or_io)?;
    regular(file)
}

/// `path` opened for reading if it is a regular file, not a symbolic link, and inside the
/// work tree `root` (symbolic links to directories are followed only while they stay
/// inside). A relative `path` is taken from the current directory, like `open`'s.
pub fn open_in_tree(root: &Path, path: &Path) -> Result<File, Refusal> {
    let (dir, name) = directory_in_tree(root, path)?;
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK;
    let fd = open_at(dir.as_raw_fd(), name, flags).map_err(link_or_io)?;
    regular(File::from(fd))
}

/// Removes the file at `path` if its directory is inside the work tree `root`: a link is
/// removed, not what it points at, and nothing outside the work tree is touched.
pub fn remove_in_tree(root: &Path, path: &Path) -> Result<(), Refusal> {
    let (dir, name) = directory_in_tree(root, path)?;
    let name = c_name(name).map_err(Refusal::Io)?;
    // SAFETY: `dir` is an open directory descriptor and `name` a valid C string.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) } != 0 {
        return Err(Refusal::Io(io::Error::last_os_error()));
    }
    Ok(())
}

/// The directory of `path`, opened, if it resolves to a place inside the work tree
/// `root`, and the file name in it.
fn directory_in_tree<'p>(root: &Path, path: &'p Path) -> Result<(OwnedFd, &'p OsStr), Refusal> {
    let Some(name) = path.file_name() else {
        return Err(Refusal::NotRegular("a directory"));
    };
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let canonical_root = std::fs::canonicalize(root).map_err(Refusal::Io)?;
    let canonical_parent = std::fs::canonicalize(parent).map_err(Refusal::Io)?;
    let Ok(inside) = canonical_parent.strip_prefix(&canonical_root) else {
        return Err(Refusal::Outside(explain_outside(
            root,
            &canonical_root,
            path,
            &canonical_parent.join(name),
        )));
    };
    let mut dir =
        open_directory(libc::AT_FDCWD, canonical_root.as_os_str(), 0).map_err(Refusal::Io)?;
    // A directory that was swapped for a link since it was resolved is not followed.
    let swapped = |e: io::Error| {
        if is_link_error(&e) {
            Refusal::Outside(format!(
                "{} became a symbolic link while it was being opened",
                canonical_parent.display()
            ))
        } else {
            Refusal::Io(e)
        }
    };
    for component in inside.components() {
        // Plain names: the path is canonical.
        let part = component.as_os_str();
        dir = open_directory(dir.as_raw_fd(), part, libc::O_NOFOLLOW).map_err(&swapped)?;
    }
    Ok((dir, name))
}

/// Whether `path` names a place under `root` on its face (`..` taken as written, links not
/// followed): a path given on the command line that does is read with [`open_in_tree`].
pub fn names_a_place_inside(root: &Path, path: &Path) -> bool {
    lexical(&root.join(path)).starts_with(lexical(root))
}

/// `path` with `.` dropped and each `..` taking off the component before it.
fn lexical(path: &Path) -> PathBuf {
    let mut place: Vec<Component> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir if matches!(place.last(), Some(Component::Normal(_))) => {
                place.pop();
            }
            other => place.push(other),
        }
    }
    place.iter().collect()
}

/// The text of the file at `path` inside the work tree `root`, when it is a regular file of
/// at most `limit_bytes` bytes of UTF-8; `None` otherwise.
pub fn read_text_in_tree(root: &Path, path: &Path, limit_bytes: u64) -> Option<String> {
    let file = open_in_tree(root, path).ok()?;
    let mut bytes = Vec::new();
    file.take(limit_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > limit_bytes {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// Why `path` (which resolved to `resolved`) is outside the work tree: the first of its
/// directories under `root` that is a symbolic link leading outside, when there is one.
fn explain_outside(root: &Path, canonical_root: &Path, path: &Path, resolved: &Path) -> String {
    let shown_root = canonical_root.display();
    let relative = path
        .strip_prefix(root)
        .or_else(|_| path.strip_prefix(canonical_root));
    if let Ok(relative) = relative {
        let mut walked = PathBuf::new();
        for component in relative.parent().into_iter().flat_map(Path::components) {
            walked.push(component);
            let here = root.join(&walked);
            let is_link = std::fs::symlink_metadata(&here).is_ok_and(|m| m.is_symlink());
            if !is_link {
                continue;
            }
            let target = std::fs::canonicalize(&here).unwrap_or_else(|_| here.clone());
            if !target.starts_with(canonical_root) {
                return format!(
                    "`{}` is a symbolic link to {}, outside the work tree {shown_root}",
                    walked.display(),
                    target.display()
                );
            }
        }
        if relative.components().any(|c| c == Component::ParentDir) {
            return format!(
                "`..` leads to {}, outside the work tree {shown_root}",
                resolved.display()
            );
        }
    }
    format!(
        "it is {}, outside the work tree {shown_root}",
        resolved.display()
    )
}

fn open_directory(at: libc::c_int, name: &OsStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    open_at(at, name, libc::O_RDONLY | libc::O_DIRECTORY | flags)
}

fn open_at(at: libc::c_int, name: &OsStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let name = c_name(name)?;
    // SAFETY: `name` is a valid C string; `at` is AT_FDCWD or a descriptor the caller owns
    // for the duration of the call.
    let fd = unsafe { libc::openat(at, name.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by `openat` and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"))
}

fn is_link_error(e: &io::Error) -> bool {
    // A link opened with O_NOFOLLOW: ELOOP on Linux and macOS, EMLINK on FreeBSD.
    matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::EMLINK))
}

fn link_or_io(e: io::Error) -> Refusal {
    if is_link_error(&e) {
        Refusal::Link
    } else {
        Refusal::Io(e)
    }
}

fn regular(file: File) -> Result<File, Refusal> {
    let kind = file.metadata().map_err(Refusal::Io)?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    Err(Refusal::NotRegular(if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a special file"
    }))
}
