//! Row 12c: what reaches the block device per received message, as an SD card sees it: the
//! WAL and database writes of row 12, and also what the file system adds (on ext4, a journal
//! commit each time an `fdatasync` finds metadata to write) and what the page cache rounds
//! up. B's whole directory (config, store, log) is on a fresh ext4 file system in a loop
//! device made for the pass; the figure is the sectors written to that device
//! (`/sys/block/loopN/stat`, field 7) from just before `qtc ctl forward` until after
//! `qtc ctl housekeep`, B's shutdown and a sync of the file system, over the messages' stored
//! bytes. Needs root, `mkfs.ext4`, `losetup` and `mount`; skipped with a message otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::daemon::Opts;
use crate::forward::{pair_in, seed};
use crate::report::Row;
use crate::util::{thousands, Ctx, TempDir, R};
use crate::Plan;

/// Messages per pass.
const MESSAGES: usize = 1_000;
/// Passes per binary (the median is reported).
const PASSES: usize = 3;
/// The file system's size: room for the store, its WAL and the log.
const IMAGE_MB: u64 = 256;

/// A fresh ext4 file system on a loop device, mounted; undone when dropped.
struct LoopMount {
    dir: TempDir,
    device: String,
}

/// Runs a command; its standard output, or what it said when it failed.
fn run(cmd: &str, args: &[&str]) -> R<String> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .ctx(format!("cannot run {cmd}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

impl LoopMount {
    /// Why this machine cannot run the row, if it cannot.
    fn unavailable() -> Option<String> {
        if run("id", &["-u"]).ok().as_deref() != Some("0") {
            return Some("needs root (a loop device and mount)".into());
        }
        ["mkfs.ext4", "losetup", "mount", "umount", "sync"]
            .iter()
            .find(|c| run("sh", &["-c", &format!("command -v {c}")]).is_err())
            .map(|c| format!("needs {c}"))
    }

    fn new() -> R<LoopMount> {
        let dir = TempDir::new("ext4")?;
        let image = dir.path().join("fs.img");
        std::fs::File::create(&image)
            .and_then(|f| f.set_len(IMAGE_MB << 20))
            .ctx("the file system image")?;
        let image = image.to_string_lossy().into_owned();
        // Inode tables and journal written now, not by a kernel thread during the pass.
        run(
            "mkfs.ext4",
            &[
                "-q",
                "-F",
                "-E",
                "lazy_itable_init=0,lazy_journal_init=0",
                &image,
            ],
        )?;
        let device = run("losetup", &["-f", "--show", &image])?;
        let mount = LoopMount { dir, device };
        std::fs::create_dir_all(mount.mountpoint()).ctx("mount point")?;
        run(
            "mount",
            &[&mount.device, &mount.mountpoint().to_string_lossy()],
        )?;
        Ok(mount)
    }

    fn mountpoint(&self) -> PathBuf {
        self.dir.path().join("mnt")
    }

    /// Bytes written to the device so far, after its file system's dirty pages and journal
    /// have been written out.
    fn written(&self) -> R<u64> {
        run("sync", &["-f", &self.mountpoint().to_string_lossy()])?;
        let name = Path::new(&self.device)
            .file_name()
            .ctx("loop device name")?
            .to_string_lossy()
            .into_owned();
        let stat = std::fs::read_to_string(format!("/sys/block/{name}/stat"))
            .ctx("/sys/block/DEV/stat")?;
        stat.split_whitespace()
            .nth(6)
            .and_then(|v| v.parse::<u64>().ok())
            .map(|sectors| sectors * 512)
            .ctx("sectors written")
    }
}

impl Drop for LoopMount {
    fn drop(&mut self) {
        let _ = run("umount", &[&self.mountpoint().to_string_lossy()]);
        let _ = run("losetup", &["-d", &self.device]);
    }
}

/// One pass: what it wrote and what became of B's WAL file.
#[derive(Clone, Copy)]
struct Pass {
    /// Bytes to the device per stored byte during the receive, housekeeping and shutdown.
    ratio: f64,
    /// Bytes to the device making the store and starting B, before that.
    setup: u64,
    /// B's WAL file before the receive and after the shutdown, in bytes: a WAL that grew
    /// past its working size made the file system write metadata at each commit's sync.
    wal: (u64, u64),
}

/// One pass on a fresh file system.
fn pass(o: &Opts) -> R<Pass> {
    let mount = LoopMount::new()?;
    let start = mount.written()?;
    let (a, mut b) = pair_in(o, "b1", "", Some(&mount.mountpoint()))?;
    seed(&a, MESSAGES)?;
    let wal_path = b.data_dir().join("qtc.sqlite-wal");
    let wal_size = || std::fs::metadata(&wal_path).map_or(0, |m| m.len());
    let wal_before = wal_size();
    let before = mount.written()?;
    let out = a.ctl(&["forward", "N0BBB"])?;
    if !out.contains(&format!("0 received, {MESSAGES} sent")) {
        return Err(format!("forward: {}", out.trim()));
    }
    b.ctl(&["housekeep"])?;
    b.terminate()?;
    let after = mount.written()?;
    let wal = (wal_before, wal_size());
    let stored = crate::disk::stored_bytes(&b)?;
    if stored == 0 {
        return Err("B holds nothing".into());
    }
    drop(b);
    Ok(Pass {
        ratio: (after - before) as f64 / stored as f64,
        setup: before - start,
        wal,
    })
}

/// Runs row 12c for the measured qtc and, with `--baseline`, the other one, passes
/// alternating.
pub fn run_rows(o: &Opts, p: &Plan) -> (Vec<Row>, Vec<String>) {
    let what = "block device bytes per received byte, B1, ext4 loop mount (an end BBS)";
    let how = format!(
        "{} × 2 KB B1 bulletins into B, durability \"{}\"; sectors written to B's own ext4 \
         loop device from `qtc ctl forward` to after `qtc ctl housekeep`, B's shutdown and \
         `sync -f`, over the stored bytes; median of {PASSES} fresh file systems",
        thousands(MESSAGES as u64),
        o.durability
    );
    if let Some(why) = LoopMount::unavailable() {
        let row = Row::info("12c", what, format!("skipped: {why}"), "", &how);
        return (vec![row], vec![format!("Row 12c skipped: {why}.")]);
    }
    let binaries = crate::binaries(o, p);
    let mut runs: Vec<Vec<Pass>> = vec![Vec::new(); binaries.len()];
    for _ in 0..PASSES {
        for (i, (tag, ob)) in binaries.iter().enumerate() {
            match pass(ob) {
                Ok(r) => runs[i].push(r),
                Err(e) => {
                    let row = Row::broken("12c", &format!("{what}{tag}"), &e, &how);
                    return (vec![row], Vec::new());
                }
            }
        }
    }
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for ((tag, _), mut r) in binaries.iter().zip(runs) {
        r.sort_by(|x, y| x.ratio.total_cmp(&y.ratio));
        let Pass { ratio, setup, .. } = r[PASSES / 2];
        let figure = format!(
            "{ratio:.2} × the message text (min {:.2}, max {:.2})",
            r[0].ratio,
            r[PASSES - 1].ratio
        );
        rows.push(Row::check(
            "12c",
            &format!("{what}{tag}"),
            figure,
            "<= 2 × the message text",
            ratio <= 2.0,
            &how,
        ));
        notes.push(format!(
            "Row 12c{tag}: making the store and starting B wrote {} bytes to the device \
             before the pass (the users, the schema, the WAL grown to its working size). \
             B's WAL file before the receive and after the shutdown, each pass: {}.",
            thousands(setup),
            r.iter()
                .map(|p| format!("{} -> {} bytes", thousands(p.wal.0), thousands(p.wal.1)))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    (rows, notes)
}
