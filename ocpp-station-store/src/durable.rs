//! Writing a whole file durably: the one way the station's state files are written (the
//! [device model](crate::device_model)'s, the [local authorization](crate::local_auth) list's,
//! the compacted [offline queue](crate::offline) journal).

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Replaces the file at `path` with `bytes` durably: `<path>.tmp` written and synced, renamed
/// over `path`, the directory synced. A crash at any point leaves the old file or the new one,
/// whole.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("ocpp-durable-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("state.json");
/// ocpp_station_store::durable::replace_durably(&path, b"{}")?;
/// assert_eq!(std::fs::read(&path)?, b"{}");
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// # Errors
/// Creating, writing or syncing `<path>.tmp`, the rename, or syncing the directory failed:
/// `path` holds the old content or the new one.
pub fn replace_durably(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = tmp_path(path);
    {
        let mut file = File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    fs::rename(&tmp, path)?;
    sync_dir(path)
}

/// `<path>.tmp`: where a new version of `path` is written before it is renamed over it.
pub(crate) fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

/// The directory `path` is in (`.` for a bare file name).
pub(crate) fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Makes the directory entries of `path`'s directory durable (a created or renamed file).
#[cfg(unix)]
pub(crate) fn sync_dir(path: &Path) -> io::Result<()> {
    File::open(dir_of(path)).and_then(|d| d.sync_all())
}

/// Directories cannot be opened for syncing here; the rename is as durable as the platform
/// makes it.
#[cfg(not(unix))]
pub(crate) fn sync_dir(_path: &Path) -> io::Result<()> {
    Ok(())
}
