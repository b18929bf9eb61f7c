//! Whether the store has room for a message before any of it moves: a partner's proposal the
//! store could not keep is deferred (FBB/B1/B2F `=`, MBL `LATER`), so the partner keeps it and
//! offers it again, instead of sending it all to have it dropped.

use qtc_store::{Quota, Store};

/// Room kept beyond a message's own: indexes, the R: lines, the WAL's frame headers.
const MARGIN: u64 = 64 * 1024;

/// Bytes the store can still take: the smaller of the quota's room and the free space of the
/// disk it is on. A quota that follows the disk is worked out again first. When that is short
/// the WAL is checkpointed and truncated first, so the space it held counts.
pub fn room(store: &mut Store, want: u64) -> u64 {
    let measure = |store: &mut Store| {
        refresh(store);
        store
            .quota_room()
            .unwrap_or(u64::MAX)
            .min(disk_free(store).free)
    };
    let room = measure(store);
    if room >= want {
        return room;
    }
    if let Err(e) = store.shrink_wal() {
        tracing::debug!(error = %e, "WAL checkpoint failed");
    }
    measure(store)
}

/// A forwarding session's running figure of the store's room, so that a long transfer does not
/// measure it (a statvfs and four page-count queries: 1.4 system calls per message in B1) for
/// every block of proposals. The figure is what was measured less what the session accepted
/// since; it is measured again when it comes within [`TRUSTED_MARGIN`] of what a block needs,
/// and after [`REMEASURE_BLOCKS`] blocks, for what users, other partners and other programs
/// took meanwhile. A figure that is too high costs no mail: the store still refuses what it
/// cannot hold, the block is not acknowledged, and the partner offers it again later.
#[derive(Debug, Default)]
pub struct Estimate {
    left: Option<u64>,
    blocks: u32,
}

/// Room above a block's need within which the running figure is trusted.
const TRUSTED_MARGIN: u64 = 64 * 1024 * 1024;
/// Blocks answered from one measurement at most.
const REMEASURE_BLOCKS: u32 = 32;

impl Estimate {
    /// Whether a block whose largest proposal needs `need` must have the room measured.
    pub fn must_measure(&self, need: u64) -> bool {
        match self.left {
            Some(left) => {
                self.blocks >= REMEASURE_BLOCKS || left < need.saturating_add(TRUSTED_MARGIN)
            }
            None => true,
        }
    }

    /// The room to answer a block with: `measured` if the store was asked, else the figure.
    pub fn begin_block(&mut self, measured: Option<u64>) -> u64 {
        if let Some(m) = measured {
            self.left = Some(m);
            self.blocks = 0;
        }
        self.blocks += 1;
        self.left.unwrap_or(0)
    }

    /// The room left once the block's accepted proposals are counted.
    pub fn end_block(&mut self, left: u64) {
        self.left = Some(left);
    }
}

/// Works a quota that follows the disk ([`Quota::FollowsDisk`], `[store] max_mb = 0`) out
/// again from the free space now: as the store grows, as other programs fill the disk, and
/// after housekeeping or anyone else frees space. A fixed quota stays as it is.
pub fn refresh(store: &mut Store) {
    if store.quota() != Quota::FollowsDisk {
        return;
    }
    let q = default_quota(store);
    if let Err(e) = store.set_max_size(q) {
        tracing::warn!(error = %e, "cannot set the store's quota");
    }
}

/// The quota `[store] max_mb = 0` stands for: the database as it is plus the disk's free
/// space, less a part of that space kept for the system, the logs and the WAL (a tenth of the
/// free space, at least 64 MiB or a tenth of the disk, whichever is less), so a full store
/// never fills the disk. 0 (no cap) when the free space is unknown.
pub fn default_quota(store: &Store) -> u64 {
    let used = std::fs::metadata(store.path()).map_or(0, |m| m.len());
    quota_from(used, disk_free(store))
}

/// [`default_quota`] from the database's size and the disk (its free space `u64::MAX`:
/// unknown).
fn quota_from(used: u64, disk: Disk) -> u64 {
    if disk.free == u64::MAX {
        // Unknown: no cap, as before.
        return 0;
    }
    // On a small disk (a 20 MB card partition) 64 MiB would be more than all of it.
    let keep = (disk.free / 10).max(KEEP_AT_LEAST.min(disk.size / 10));
    // At least 1: 0 would mean no cap at all.
    used.saturating_add(disk.free.saturating_sub(keep)).max(1)
}

/// The least free space a default quota leaves on a disk of 640 MiB or more.
const KEEP_AT_LEAST: u64 = 64 * 1024 * 1024;

/// A filesystem's size and free space, in bytes.
#[derive(Clone, Copy, Debug)]
struct Disk {
    size: u64,
    free: u64,
}

fn disk_free(store: &Store) -> Disk {
    let dir = store
        .path()
        .parent()
        .map(|p| p.to_path_buf())
        .unwrap_or_default();
    // The statvfs field types differ between platforms (32-bit on some ARM boards).
    #[allow(clippy::unnecessary_cast)]
    nix::sys::statvfs::statvfs(&dir)
        .map(|v| Disk {
            size: (v.blocks() as u64).saturating_mul(v.fragment_size() as u64),
            free: (v.blocks_available() as u64).saturating_mul(v.fragment_size() as u64),
        })
        .unwrap_or(Disk {
            size: u64::MAX,
            free: u64::MAX,
        })
}

/// What a message of `size` bytes needs: itself, its compressed form kept for forwarding, and
/// the margin.
pub fn need(size: u64) -> u64 {
    size.saturating_mul(2).saturating_add(MARGIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;
    const GIB: u64 = 1024 * MIB;

    fn disk(size: u64, free: u64) -> Disk {
        Disk { size, free }
    }

    #[test]
    fn the_default_quota_leaves_a_tenth_of_the_free_space_and_at_least_64_mib() {
        // A large disk: the store may grow by nine tenths of the free space.
        assert_eq!(
            quota_from(100 * MIB, disk(64 * GIB, 10 * GIB)),
            100 * MIB + 9 * GIB
        );
        // A small one: 64 MiB stay free whatever a tenth is.
        assert_eq!(
            quota_from(5 * MIB, disk(GIB, 100 * MIB)),
            5 * MIB + 36 * MIB
        );
        assert_eq!(
            quota_from(5 * MIB, disk(GIB, 640 * MIB)),
            5 * MIB + 576 * MIB
        );
        // Less free than that: the store keeps what it has and takes no more.
        assert_eq!(quota_from(5 * MIB, disk(GIB, 10 * MIB)), 5 * MIB);
        // Even an empty store on a full disk gets a cap (0 would be none).
        assert_eq!(quota_from(0, disk(GIB, 0)), 1);
    }

    #[test]
    fn a_small_disk_keeps_a_tenth_of_itself_not_64_mib() {
        // A 20 MB filesystem with 17 MB free: the store may take most of it (it got nothing).
        let q = quota_from(200 * 1024, disk(20 * MIB, 17 * MIB));
        assert_eq!(q, 200 * 1024 + 17 * MIB - 2 * MIB);
    }

    #[test]
    fn the_running_room_figure_is_measured_again_near_the_need_and_every_32_blocks() {
        let mut e = Estimate::default();
        assert!(e.must_measure(10));
        assert_eq!(e.begin_block(Some(100 * MIB)), 100 * MIB);
        e.end_block(90 * MIB);
        assert!(!e.must_measure(MIB));
        assert!(e.must_measure(30 * MIB), "within the margin of the need");
        for _ in 1..REMEASURE_BLOCKS {
            assert!(!e.must_measure(MIB));
            let left = e.begin_block(None);
            e.end_block(left);
        }
        assert!(e.must_measure(MIB), "after 32 blocks");
        assert_eq!(e.begin_block(Some(5 * MIB)), 5 * MIB);
        assert!(
            e.must_measure(MIB),
            "a small room is measured at every block"
        );
    }

    #[test]
    fn an_unknown_free_space_sets_no_quota() {
        assert_eq!(quota_from(5 * MIB, disk(u64::MAX, u64::MAX)), 0);
    }
}
