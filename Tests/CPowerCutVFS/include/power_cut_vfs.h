#ifndef EVENTQUEUE_POWER_CUT_VFS_H
#define EVENTQUEUE_POWER_CUT_VFS_H

#include <stdint.h>

// A power cut, simulated under SQLite (docs/RELIABILITY.md, "Hardening V: a power cut, simulated"). For tests only:
// no shipped product links it.
//
// The shim is an SQLite VFS over the unix VFS. While a session runs it is SQLite's default VFS, so that the
// library, which opens with the default VFS, goes through it unchanged; files opened outside the session's
// directory are passed through untouched, so other tests in the process are not affected, and after the session
// the unix VFS is the default again. Inside a session it keeps, for the main database
// file, its WAL and a rollback journal, what a disk would have kept if the power went now: writes go to the real
// file, and the shim remembers the durable content of every sector written since the file was last synced (an
// undo log). A cut makes every later I/O of the session's files fail, so that no thread gets past it; finishing
// the session then gives each file the content a disk may have after that cut, and throws the `-shm` away (it
// is memory after a reboot).
//
// This header includes no SQLite header on purpose: Swift imports the SQLite API from CSQLite, and two modules
// declaring the same C types would make them ambiguous.

/// What the disk keeps of the sectors written since a file's last sync.
typedef enum pcvfs_loss {
    /// Nothing: every such sector is as it was at the last sync, and each file's size is its size then.
    PCVFS_LOSE_ALL = 0,
    /// Each such sector either has the new bytes or the old ones (a coin per 512-byte sector); a file's size is
    /// its size at the last sync or now.
    PCVFS_RANDOM_SECTORS = 1,
    /// As PCVFS_RANDOM_SECTORS, and a third of the sectors have random bytes where they were written (a torn
    /// write). Bytes of a sector that were not written keep their content (SQLite's "powersafe overwrite").
    PCVFS_TORN_SECTORS = 2,
} pcvfs_loss;

/// What a session saw and what the cut did, for the test's figures and its sanity checks.
typedef struct pcvfs_report {
    /// Files of the session opened through the shim (distinct paths).
    uint64_t files;
    /// Writes, syncs and truncations of those files before the cut.
    uint64_t writes;
    uint64_t syncs;
    uint64_t truncations;
    /// Of the writes, those to a main database file (in WAL mode: checkpoints).
    uint64_t main_writes;
    /// Whether the cut was the armed countdown's (`pcvfs_cut_after`) rather than `pcvfs_cut` or the finish.
    uint64_t cut_by_countdown;
    /// Calls refused because the power was gone (reads, writes, syncs, locks, opens after the cut).
    uint64_t refused_after_cut;
    /// Syncs that were running when the power went: their data counts as unsynced.
    uint64_t syncs_interrupted;
    /// Sectors written since their file's last sync, at the cut, and what became of them.
    uint64_t sectors_unsynced;
    uint64_t sectors_kept;
    uint64_t sectors_lost;
    uint64_t sectors_torn;
    /// Of the unsynced sectors, those of a main database file (the cut fell in or after a checkpoint's writes,
    /// before its sync of the file).
    uint64_t main_sectors_unsynced;
    /// Files created in the session whose directory was never synced afterwards, and that the cut removed.
    uint64_t files_lost;
    /// Bytes the cut took off files' ends (writes that had grown the file past its synced size).
    uint64_t bytes_cut_off;
    /// Files still open at the finish (it then changes nothing: the test must close every connection first).
    uint64_t files_still_open;
    /// pwrite, ftruncate or unlink calls of the finish that failed (the result is then not a valid cut).
    uint64_t finish_errors;
} pcvfs_report;

/// Registers the shim with SQLite, not as the default (once per process; later calls do nothing). Returns 0
/// (SQLITE_OK), or SQLite's error code.
int pcvfs_install(void);

/// Starts a session over `directory` (an existing directory; no session may be running) and makes the shim the
/// default VFS: files opened under it from now on are tracked, and a file's content when the session first opens
/// it counts as synced. Returns 0, or -1.
int pcvfs_begin(const char *directory);

/// Which operations an armed countdown counts.
typedef enum pcvfs_count {
    /// Every write, sync or truncation of a tracked file.
    PCVFS_COUNT_ALL = 0,
    /// Only those of a main database file: in WAL mode a checkpoint's, so the cut falls inside a checkpoint.
    PCVFS_COUNT_MAIN = 1,
    /// Every one, once a sync of a main database file has returned (in WAL mode, the end of a checkpoint that
    /// copied the whole WAL): the cut falls just after a checkpoint, while the WAL starts over from its beginning.
    PCVFS_COUNT_AFTER_CHECKPOINT = 2,
} pcvfs_count;

/// Arms the cut: the `operations`-th operation that `count` counts from now on (1: the next one) finds the power
/// gone and fails, as does everything after it.
void pcvfs_cut_after(uint64_t operations, pcvfs_count count);

/// Cuts the power now (nothing of the session's files is written or synced after this returns).
void pcvfs_cut(void);

/// Whether the power is gone.
int pcvfs_is_cut(void);

/// Ends the session: cuts the power if it was not cut yet, then, once every tracked file is closed, gives each
/// file what the disk keeps under `loss` (random choices from `seed`), removes the main files' `-shm`, and makes
/// the VFS that was the default before the session the default again. Returns 0, or -1 (files still open:
/// nothing was changed and the session goes on; or an I/O error) with `report` saying which.
int pcvfs_finish(pcvfs_loss loss, uint64_t seed, pcvfs_report *report);

#endif
