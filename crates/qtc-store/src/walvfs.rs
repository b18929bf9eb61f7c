//! A VFS over SQLite's own unix VFS that gathers the WAL writes of a commit into one `pwrite`.
//!
//! SQLite writes each WAL frame with two calls, its 24-byte header and then its page, so a
//! received block of five messages (about 14 frames) cost 28 `pwrite` calls. Through this VFS it
//! costs one. Only that exact pattern is held back: a 24-byte write, the write right after it, and
//! the 32-byte WAL header, each starting where the held bytes end. The write of a commit frame's
//! page (its header names the database size after the commit) sends everything held before it
//! returns, as does every other write, and every read, sync, truncate, size query, file control
//! and close first sends what is held. So when SQLite syncs the WAL or publishes the commit in the
//! wal-index, the file holds exactly what it would have held without this VFS, and a crash
//! leaves at worst a shorter tail of uncommitted frames, which recovery ignores as before.
//!
//! Only WAL files are touched: every other file gets the unix VFS's own methods, untouched. This
//! is the crate's one use of `unsafe`: SQLite's VFS interface is C function tables; no crate
//! offers such a shim over the built-in VFS.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

use rusqlite::ffi;

/// The name connections open the store with.
pub(crate) const NAME: &CStr = c"qtc-wal";

/// Held bytes beyond this are sent at once (a transaction that spills pages before its commit).
const MAX_HELD: usize = 1 << 20;

/// The most the unix VFS writes in one call: it masks a write's length with 0x1ffff.
const MAX_WRITE: usize = 0x1ffff;

/// A WAL frame header's size; the WAL file header's.
const FRAME_HEADER: usize = 24;
const WAL_HEADER: usize = 32;

/// What a WAL file carries after the unix VFS's own file object.
struct Held {
    /// The unix VFS's methods for this file, called for everything.
    real: *const ffi::sqlite3_io_methods,
    /// Bytes written but not yet sent, and the file offset of the first.
    bytes: Vec<u8>,
    at: i64,
    /// After a 24-byte frame header: whether it is a commit frame's.
    after_header: Option<bool>,
}

/// Where [`Held`] starts in a file object: after the unix VFS's own, aligned. Set when the VFS
/// is registered (once per process).
static HELD_AT: OnceLock<Result<usize, String>> = OnceLock::new();

/// Registers the VFS (once per process); connections then open with [`NAME`].
pub(crate) fn register() -> Result<(), String> {
    HELD_AT
        .get_or_init(|| {
            // SAFETY: sqlite3_vfs_find returns SQLite's default VFS (or null), which lives as long
            // as the process; our copy is leaked so it does too, as SQLite requires.
            unsafe {
                let real = ffi::sqlite3_vfs_find(std::ptr::null());
                if real.is_null() {
                    return Err("SQLite has no default VFS".into());
                }
                let held_at =
                    ((*real).szOsFile as usize).next_multiple_of(std::mem::align_of::<Held>());
                let mut ours = *real;
                ours.szOsFile = (held_at + std::mem::size_of::<Held>()) as c_int;
                ours.zName = NAME.as_ptr();
                ours.pNext = std::ptr::null_mut();
                ours.pAppData = real.cast();
                ours.xOpen = Some(open);
                let rc = ffi::sqlite3_vfs_register(Box::into_raw(Box::new(ours)), 0);
                if rc != ffi::SQLITE_OK {
                    return Err(format!(
                        "cannot register the {NAME:?} VFS: SQLite error {rc}"
                    ));
                }
                Ok(held_at)
            }
        })
        .as_ref()
        .map(|_| ())
        .map_err(Clone::clone)
}

/// The [`Held`] of a WAL file.
///
/// # Safety
/// `file` was opened by [`open`] as a WAL file and not yet closed.
unsafe fn held<'a>(file: *mut ffi::sqlite3_file) -> &'a mut Held {
    &mut *file.cast::<u8>().add(held_at()).cast::<Held>()
}

/// [`HELD_AT`]; only files of our VFS, which exists once it is registered, ask for it.
fn held_at() -> usize {
    match HELD_AT.get() {
        Some(Ok(at)) => *at,
        _ => unreachable!("a file of the {NAME:?} VFS before it was registered"),
    }
}

/// # Safety
/// Called by SQLite as the VFS's xOpen.
unsafe extern "C" fn open(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let real: *mut ffi::sqlite3_vfs = (*vfs).pAppData.cast();
    let Some(real_open) = (*real).xOpen else {
        return ffi::SQLITE_CANTOPEN;
    };
    // The unix VFS's file object sits at the start, so its own methods work on it unchanged.
    let rc = real_open(real, name, file, flags, out_flags);
    if rc != ffi::SQLITE_OK || flags & ffi::SQLITE_OPEN_WAL == 0 || (*file).pMethods.is_null() {
        return rc;
    }
    let at = file.cast::<u8>().add(held_at()).cast::<Held>();
    at.write(Held {
        real: (*file).pMethods,
        bytes: Vec::new(),
        at: 0,
        after_header: None,
    });
    (*file).pMethods = &WAL_METHODS;
    rc
}

static WAL_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 1,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

/// The unix VFS's method `$m` of `file`.
macro_rules! real {
    ($file:expr, $m:ident) => {
        (*held($file).real)
            .$m
            .expect(concat!("the unix VFS has ", stringify!($m)))
    };
}

/// Sends what is held: one write for up to [`MAX_WRITE`] bytes (a block's commit).
///
/// # Safety
/// `file` is an open WAL file of ours.
unsafe fn flush(file: *mut ffi::sqlite3_file) -> c_int {
    let h = held(file);
    h.after_header = None;
    let real_write = (*h.real).xWrite.expect("the unix VFS has xWrite");
    let mut rc = ffi::SQLITE_OK;
    let mut at = h.at;
    for piece in h.bytes.chunks(MAX_WRITE) {
        // MAX_WRITE fits a c_int. The unix VFS's write touches only its own part of `file`.
        rc = real_write(file, piece.as_ptr().cast(), piece.len() as c_int, at);
        if rc != ffi::SQLITE_OK {
            break;
        }
        at += piece.len() as i64;
    }
    h.bytes.clear();
    if h.bytes.capacity() > MAX_HELD {
        h.bytes.shrink_to(MAX_HELD);
    }
    rc
}

unsafe extern "C" fn write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    len: c_int,
    offset: i64,
) -> c_int {
    let h = held(file);
    let n = len as usize;
    if !h.bytes.is_empty() && offset != h.at + h.bytes.len() as i64 {
        let rc = flush(file);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
    }
    let h = held(file);
    let bytes = std::slice::from_raw_parts(data.cast::<u8>(), n);
    if h.bytes.is_empty() {
        h.at = offset;
    }
    h.bytes.extend_from_slice(bytes);
    let send = match h.after_header.take() {
        // A frame's page: a commit frame's goes out now, with everything before it.
        Some(commit) => commit,
        // A frame header: hold it; bytes 4-7 are the database size after a commit, else 0.
        None if n == FRAME_HEADER => {
            h.after_header = Some(bytes[4..8] != [0; 4]);
            false
        }
        // The WAL file's header, followed by the first frame.
        None if n == WAL_HEADER && offset == 0 => false,
        // Anything else goes out at once.
        None => true,
    };
    if send || h.bytes.len() >= MAX_HELD {
        flush(file)
    } else {
        ffi::SQLITE_OK
    }
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    let flushed = flush(file);
    let real_close = real!(file, xClose);
    std::ptr::drop_in_place(held(file));
    let rc = real_close(file);
    if flushed != ffi::SQLITE_OK {
        flushed
    } else {
        rc
    }
}

/// Defines a method that sends what is held, then calls the unix VFS's.
macro_rules! flushing {
    ($name:ident, $m:ident, $($arg:ident: $ty:ty),*) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file, $($arg: $ty),*) -> c_int {
            let rc = flush(file);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            real!(file, $m)(file, $($arg),*)
        }
    };
}

/// Defines a method that only calls the unix VFS's.
macro_rules! passing {
    ($name:ident, $m:ident, $($arg:ident: $ty:ty),*) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file, $($arg: $ty),*) -> c_int {
            real!(file, $m)(file, $($arg),*)
        }
    };
}

flushing!(read, xRead, buf: *mut c_void, len: c_int, offset: i64);
flushing!(truncate, xTruncate, size: i64);
flushing!(sync, xSync, flags: c_int);
flushing!(file_size, xFileSize, size: *mut i64);
flushing!(file_control, xFileControl, op: c_int, arg: *mut c_void);
passing!(lock, xLock, level: c_int);
passing!(unlock, xUnlock, level: c_int);
passing!(check_reserved_lock, xCheckReservedLock, out: *mut c_int);
passing!(sector_size, xSectorSize,);
passing!(device_characteristics, xDeviceCharacteristics,);
