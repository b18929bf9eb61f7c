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
//! A checkpoint copies pages from the WAL into the database, one `pread` and one `pwrite` per
//! page; with small pages (lib.rs `PAGE_SIZE`) a 2 KB message fills a run of consecutive pages.
//! So the shim also
//!
//! - holds the database file's writes while each starts where the held ones end, up to the end
//!   of a 4 KB page of the page cache, and sends them in one `pwrite` at that boundary and
//!   before any other call on that file (a read, the sync that ends the checkpoint, a lock, a
//!   size query...): the database holds every page written before SQLite syncs it, and a
//!   checkpoint publishes what it copied only after that sync (qtc never runs the writer with
//!   `synchronous = OFF`). Not longer runs: a write of many 4 KB pages makes the page cache
//!   keep them as one large folio, and a later write of one SQLite page into it dirties, and
//!   has written back, the whole folio (measured: 1 KB more per received message);
//! - reads the WAL ahead when SQLite reads the frame right after the one it read last (a
//!   checkpoint walking a run of pages), and serves the next frames from that buffer. The buffer
//!   holds only while no lock of the database changes ([`EPOCH`]): frames a reader or writer
//!   sees are fixed while it holds its locks, and a write to the WAL drops it too.
//!
//! The database file is opened with SQLite's persistent-WAL flag: the WAL file is not deleted
//! when the last connection closes (lib.rs keeps it at its working size).
//!
//! Only WAL files and the main database file are touched: every other file (a journal, a temp
//! file) gets the unix VFS's own methods. This is the crate's one use of `unsafe`: SQLite's VFS
//! interface is C function tables; no crate offers such a shim over the built-in VFS.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
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

/// The page cache's page.
const OS_PAGE: i64 = 4096;

/// How much of the WAL one read ahead takes.
const READ_AHEAD: usize = 64 * 1024;

/// Moves whenever a database file of this VFS takes or drops a lock (file or wal-index): the
/// WAL read ahead is good only within one value of it.
static EPOCH: AtomicU64 = AtomicU64::new(0);

/// Which file a [`Held`] belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Wal,
    Db,
}

/// What a WAL or database file carries after the unix VFS's own file object.
struct Held {
    /// The unix VFS's methods for this file, called for everything.
    real: *const ffi::sqlite3_io_methods,
    kind: Kind,
    /// Bytes written but not yet sent, and the file offset of the first.
    bytes: Vec<u8>,
    at: i64,
    /// After a 24-byte frame header: whether it is a commit frame's.
    after_header: Option<bool>,
    /// WAL read ahead: bytes from `ahead_at`, good while [`EPOCH`] is `ahead_epoch`.
    ahead: Vec<u8>,
    ahead_at: i64,
    ahead_epoch: u64,
    /// Where the last read ended (a read at this plus a frame header is the next frame).
    read_end: i64,
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
    let kind = if flags & ffi::SQLITE_OPEN_WAL != 0 {
        Kind::Wal
    } else if flags & ffi::SQLITE_OPEN_MAIN_DB != 0 {
        Kind::Db
    } else {
        return rc;
    };
    if rc != ffi::SQLITE_OK || (*file).pMethods.is_null() {
        return rc;
    }
    let at = file.cast::<u8>().add(held_at()).cast::<Held>();
    at.write(Held {
        real: (*file).pMethods,
        kind,
        bytes: Vec::new(),
        at: 0,
        after_header: None,
        ahead: Vec::new(),
        ahead_at: 0,
        ahead_epoch: 0,
        read_end: -1,
    });
    (*file).pMethods = match kind {
        Kind::Wal => &WAL_METHODS,
        Kind::Db => &DB_METHODS,
    };
    if kind == Kind::Db {
        // The WAL outlives the last connection (SQLite would delete it at close): its blocks
        // stay allocated, and commits keep writing over them (lib.rs, `prepare_wal`).
        let mut persist: c_int = 1;
        let real_control = (*(*at).real)
            .xFileControl
            .expect("the unix VFS has xFileControl");
        real_control(
            file,
            ffi::SQLITE_FCNTL_PERSIST_WAL,
            std::ptr::from_mut(&mut persist).cast(),
        );
    }
    rc
}

static WAL_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 1,
    xClose: Some(close),
    xRead: Some(read_wal),
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

/// The main database file: the unix VFS's version-3 methods, each sending held writes first,
/// the locks moving [`EPOCH`].
static DB_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(db_lock),
    xUnlock: Some(db_unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
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
/// `file` is an open WAL or database file of ours.
unsafe fn flush(file: *mut ffi::sqlite3_file) -> c_int {
    let h = held(file);
    h.after_header = None;
    if h.bytes.is_empty() {
        return ffi::SQLITE_OK;
    }
    // What is read ahead may be older than what goes out now.
    h.ahead.clear();
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
    h.ahead.clear();
    let bytes = std::slice::from_raw_parts(data.cast::<u8>(), n);
    if h.bytes.is_empty() {
        h.at = offset;
    }
    h.bytes.extend_from_slice(bytes);
    if h.kind == Kind::Db {
        // A checkpoint's run of pages: held while they follow each other, up to the end of an
        // OS page (a write that dirties more would make the page cache keep the file in large
        // folios, and a later one-page write would dirty a whole folio).
        return if (h.at + h.bytes.len() as i64) % OS_PAGE == 0 {
            flush(file)
        } else {
            ffi::SQLITE_OK
        };
    }
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

/// Defines a lock method of the database file: sends what is held, moves [`EPOCH`] (what was
/// read of the WAL ahead may change once locks change), then calls the unix VFS's.
macro_rules! locking {
    ($name:ident, $m:ident, $($arg:ident: $ty:ty),*) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file, $($arg: $ty),*) -> c_int {
            let rc = flush(file);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            EPOCH.fetch_add(1, Ordering::SeqCst);
            real!(file, $m)(file, $($arg),*)
        }
    };
}

/// A WAL read: from the read-ahead buffer when it holds the bytes; when SQLite reads the frame
/// right after the last one (a checkpoint walking a run of pages), the next [`READ_AHEAD`]
/// bytes are read at once.
///
/// # Safety
/// Called by SQLite as a WAL file's xRead.
unsafe extern "C" fn read_wal(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    len: c_int,
    offset: i64,
) -> c_int {
    let rc = flush(file);
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    let h = held(file);
    let n = len as usize;
    let next_frame = offset == h.read_end + FRAME_HEADER as i64;
    h.read_end = offset + i64::from(len);
    if h.ahead_epoch != EPOCH.load(Ordering::SeqCst) {
        h.ahead.clear();
    }
    let from = offset - h.ahead_at;
    if !h.ahead.is_empty() && from >= 0 && from as usize + n <= h.ahead.len() {
        let from = from as usize;
        std::ptr::copy_nonoverlapping(h.ahead[from..].as_ptr(), buf.cast::<u8>(), n);
        return ffi::SQLITE_OK;
    }
    let real_read = real!(file, xRead);
    if next_frame && n < READ_AHEAD {
        let h = held(file);
        h.ahead.resize(READ_AHEAD, 0);
        h.ahead_epoch = EPOCH.load(Ordering::SeqCst);
        let rc = real_read(
            file,
            h.ahead.as_mut_ptr().cast(),
            READ_AHEAD as c_int,
            offset,
        );
        let h = held(file);
        if rc == ffi::SQLITE_OK {
            h.ahead_at = offset;
            std::ptr::copy_nonoverlapping(h.ahead.as_ptr(), buf.cast::<u8>(), n);
            return ffi::SQLITE_OK;
        }
        // Past the end of the file (a short read) or an error: read just what was asked.
        h.ahead.clear();
    }
    real_read(file, buf, len, offset)
}

flushing!(read, xRead, buf: *mut c_void, len: c_int, offset: i64);
flushing!(truncate, xTruncate, size: i64);
flushing!(sync, xSync, flags: c_int);
flushing!(file_size, xFileSize, size: *mut i64);
flushing!(file_control, xFileControl, op: c_int, arg: *mut c_void);
passing!(lock, xLock, level: c_int);
passing!(unlock, xUnlock, level: c_int);
locking!(db_lock, xLock, level: c_int);
locking!(db_unlock, xUnlock, level: c_int);
locking!(shm_lock, xShmLock, offset: c_int, n: c_int, flags: c_int);
flushing!(shm_map, xShmMap, region: c_int, size: c_int, extend: c_int, out: *mut *mut c_void);
flushing!(fetch, xFetch, offset: i64, amount: c_int, out: *mut *mut c_void);
flushing!(unfetch, xUnfetch, offset: i64, page: *mut c_void);
flushing!(shm_unmap, xShmUnmap, delete: c_int);

/// xShmBarrier returns nothing: sends what is held, then the unix VFS's barrier.
///
/// # Safety
/// Called by SQLite as the database file's xShmBarrier.
unsafe extern "C" fn shm_barrier(file: *mut ffi::sqlite3_file) {
    let _ = flush(file);
    real!(file, xShmBarrier)(file);
}
passing!(check_reserved_lock, xCheckReservedLock, out: *mut c_int);
passing!(sector_size, xSectorSize,);
passing!(device_characteristics, xDeviceCharacteristics,);
