//! Whether the store has room for a message before any of it moves: a partner's proposal the
//! store could not keep is deferred (FBB/B1/B2F `=`, MBL `LATER`), so the partner keeps it and
//! offers it again, instead of sending it all to have it dropped.

use qtc_store::Store;

/// Room kept beyond a message's own: indexes, the R: lines, the WAL's frame headers.
const MARGIN: u64 = 64 * 1024;

/// Bytes the store can still take: the smaller of the `[store] max_mb` quota's room and the
/// free space of the disk it is on. When that is short the WAL is checkpointed and truncated
/// first, so the space it held counts.
pub fn room(store: &mut Store, want: u64) -> u64 {
    let measure = |store: &mut Store| store.quota_room().unwrap_or(u64::MAX).min(disk_free(store));
    let room = measure(store);
    if room >= want {
        return room;
    }
    if let Err(e) = store.shrink_wal() {
        tracing::debug!(error = %e, "WAL checkpoint failed");
    }
    measure(store)
}

/// The quota `[store] max_mb = 0` stands for: the database as it is plus the disk's free
/// space, less a tenth of that space (at least 64 MiB) kept for the system, the logs and the
/// WAL, so a full store never fills the disk. 0 (no cap) when the free space is unknown.
pub fn default_quota(store: &Store) -> u64 {
    let used = std::fs::metadata(store.path()).map_or(0, |m| m.len());
    quota_from(used, disk_free(store))
}

/// [`default_quota`] from the database's size and the disk's free space (`u64::MAX`: unknown).
fn quota_from(used: u64, free: u64) -> u64 {
    if free == u64::MAX {
        // Unknown: no cap, as before.
        return 0;
    }
    let keep = (free / 10).max(KEEP_AT_LEAST);
    // At least 1: 0 would mean no cap at all.
    used.saturating_add(free.saturating_sub(keep)).max(1)
}

/// The least free space a default quota leaves on the disk.
const KEEP_AT_LEAST: u64 = 64 * 1024 * 1024;

fn disk_free(store: &Store) -> u64 {
    let dir = store
        .path()
        .parent()
        .map(|p| p.to_path_buf())
        .unwrap_or_default();
    // The statvfs field types differ between platforms (32-bit on some ARM boards).
    #[allow(clippy::unnecessary_cast)]
    nix::sys::statvfs::statvfs(&dir)
        .map(|v| (v.blocks_available() as u64).saturating_mul(v.fragment_size() as u64))
        .unwrap_or(u64::MAX)
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

    #[test]
    fn the_default_quota_leaves_a_tenth_of_the_free_space_and_at_least_64_mib() {
        // A large disk: the store may grow by nine tenths of the free space.
        assert_eq!(quota_from(100 * MIB, 10 * GIB), 100 * MIB + 9 * GIB);
        // A small one: 64 MiB stay free whatever a tenth is.
        assert_eq!(quota_from(5 * MIB, 100 * MIB), 5 * MIB + 36 * MIB);
        assert_eq!(quota_from(5 * MIB, 640 * MIB), 5 * MIB + 576 * MIB);
        // Less free than that: the store keeps what it has and takes no more.
        assert_eq!(quota_from(5 * MIB, 10 * MIB), 5 * MIB);
        // Even an empty store on a full disk gets a cap (0 would be none).
        assert_eq!(quota_from(0, 0), 1);
    }

    #[test]
    fn an_unknown_free_space_sets_no_quota() {
        assert_eq!(quota_from(5 * MIB, u64::MAX), 0);
    }
}
