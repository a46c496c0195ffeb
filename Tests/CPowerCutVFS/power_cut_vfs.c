#define _GNU_SOURCE
#include "power_cut_vfs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// The model (power_cut_vfs.h says what the shim is for).
//
// A tracked file's *durable* content is what a disk is sure to return after a power cut: its content when it was
// first opened in the session, then at each successful xSync. Writes go to the real file at once; before a sector
// (PC_SECTOR bytes) is first written after a sync, its durable bytes are kept in a `pc_sector` (an undo log). The
// invariants, each kept under `pc_mutex`:
//   - a sector with no entry reads from the real file exactly as its durable content (bytes past the durable size
//     aside, which only writes or a size hint's zeros can have made: a written one has an entry);
//   - an entry's `durable` holds the sector's durable bytes (zero past the durable size), and [lo, hi) covers
//     every byte written since: the bytes outside it are the same in the real file and in `durable`, which is
//     what keeps the loss within what was written (SQLite relies on that: SQLITE_IOCAP_POWERSAFE_OVERWRITE);
//   - `durable_size` is the file's size at its last successful sync (or when first opened).
//
// A sync is what `fdatasync` promises: everything written before it began is durable when it returns; what is
// written while it runs may or may not be. So a sync takes a snapshot of every dirty sector when it begins
// (`pending`), runs the real xSync without the global mutex (writers of the next commit keep writing meanwhile,
// as the deferred sync intends), and on success makes the snapshot the durable content; the bytes written during
// the sync stay dirty (`pending_lo`/`pending_hi`). Syncs of one file are serialized (`sync_mutex`) so that one
// snapshot is in flight per file. A sync that is still running when the power goes makes nothing durable.
// A truncation is no more durable than a write: the bytes it cuts off are kept (as if written), and a cut that
// keeps the old size puts them back.
//
// Names: the unix VFS syncs a file's directory once, at the first successful xSync of a file object that it
// opened with SQLITE_OPEN_CREATE as a WAL or journal (UNIXFILE_DIRSYNC in os_unix.c). The shim mirrors that: a
// file created in the session has a name that a cut may take away until such a sync of a file in its directory;
// that directory sync makes every earlier name in the directory durable. A deletion (xDelete) is taken as durable
// at once: SQLite deletes the WAL only after a checkpoint of all of it, and the tests never get there.
//
// The cut: `pc_cut` is set under `pc_mutex`, and every write, sync or truncation checks it under the same mutex
// before touching the file, so nothing of a tracked file changes on disk after the cut; reads, locks, opens and
// size queries fail too, so no thread gets past it. Unlocks, closes and the shared-memory calls go through: they
// write nothing durable (the -shm is thrown away at the finish).

enum { PC_SECTOR = 512 };

typedef struct pc_sector {
    unsigned char durable[PC_SECTOR];
    // While a sync of the file runs: the sector when the sync began (what it makes durable).
    unsigned char *pending;
    // Bytes written since `durable` was durable; since `pending` was taken. Empty: lo >= hi.
    uint32_t lo, hi;
    uint32_t pending_lo, pending_hi;
} pc_sector;

typedef struct pc_path {
    struct pc_path *next;
    char *name;
    // A main database file: its `-shm` is thrown away at the finish.
    int is_main;
    // File objects of the shim open on it now.
    int open_files;
    // Removed with xDelete: nothing to restore.
    int deleted;
    // 0: created in the session and its directory not synced since; the cut may remove it.
    int name_durable;
    sqlite3_int64 durable_size;
    // Indexed by sector number; NULL: the sector is as durable.
    pc_sector **sectors;
    size_t sector_capacity;
    // The sector numbers that have an entry, in no order.
    size_t *dirty;
    size_t dirty_count;
    size_t dirty_capacity;
    // One sync of the file at a time (its snapshot is the sectors' `pending`).
    pthread_mutex_t sync_mutex;
    // The file's size when the running sync began.
    sqlite3_int64 pending_size;
} pc_path;

// A file object of the shim, followed in the same allocation by the unix VFS's own (`real`).
typedef struct pc_file {
    sqlite3_file base;
    // NULL: not a tracked file; every call goes straight to `real`.
    pc_path *path;
    // Mirrors the unix VFS's UNIXFILE_DIRSYNC: its first successful sync also syncs the directory.
    int syncs_directory;
    sqlite3_file *real;
} pc_file;

static pthread_mutex_t pc_mutex = PTHREAD_MUTEX_INITIALIZER;
// Set under pc_mutex; read without it by the calls that only need to fail after the cut.
static atomic_int pc_cut;
static sqlite3_vfs *pc_root;

static struct {
    int active;
    char *directory;
    size_t directory_length;
    pc_path *paths;
    // 0: not armed; else the counted operations left before the cut (the one that brings it to 0 is refused).
    uint64_t countdown;
    pcvfs_count count;
    // PCVFS_COUNT_AFTER_CHECKPOINT: whether a main file's sync has returned, so that counting has begun.
    int checkpointed;
    pcvfs_report report;
    // The default VFS when the session began, made the default again at its finish.
    sqlite3_vfs *previous_default;
} pc_session;

// ---- The undo log ----

static void pc_cut_locked(int by_countdown) {
    if (atomic_load(&pc_cut)) return;
    atomic_store(&pc_cut, 1);
    pc_session.report.cut_by_countdown = (uint64_t)by_countdown;
}

// Called under pc_mutex before each write, sync or truncation of a tracked file: whether the power is gone, counting
// the operation against an armed countdown.
static int pc_power_gone_locked(const pc_path *path) {
    if (atomic_load(&pc_cut)) return 1;
    int counted = pc_session.count == PCVFS_COUNT_ALL || (pc_session.count == PCVFS_COUNT_MAIN && path->is_main)
        || (pc_session.count == PCVFS_COUNT_AFTER_CHECKPOINT && pc_session.checkpointed);
    if (pc_session.countdown > 0 && counted) {
        pc_session.countdown -= 1;
        if (pc_session.countdown == 0) {
            pc_cut_locked(1);
            return 1;
        }
    }
    return 0;
}

static void pc_refused(void) {
    pthread_mutex_lock(&pc_mutex);
    pc_session.report.refused_after_cut += 1;
    pthread_mutex_unlock(&pc_mutex);
}

// Reads a sector of the real file through `real`; bytes past its end read as zeros (SQLite's short-read contract).
static int pc_read_sector(sqlite3_file *real, size_t sector, unsigned char *buffer) {
    int rc = real->pMethods->xRead(real, buffer, PC_SECTOR, (sqlite3_int64)sector * PC_SECTOR);
    return rc == SQLITE_IOERR_SHORT_READ ? SQLITE_OK : rc;
}

// The entry of `sector`, made (with the sector's durable bytes, read before the write that asks) when missing.
static int pc_entry(pc_path *path, sqlite3_file *real, size_t sector, pc_sector **out) {
    if (sector >= path->sector_capacity) {
        size_t capacity = path->sector_capacity ? path->sector_capacity : 64;
        while (capacity <= sector) capacity *= 2;
        pc_sector **grown = realloc(path->sectors, capacity * sizeof *grown);
        if (grown == NULL) return SQLITE_IOERR_NOMEM;
        memset(grown + path->sector_capacity, 0, (capacity - path->sector_capacity) * sizeof *grown);
        path->sectors = grown;
        path->sector_capacity = capacity;
    }
    if (path->sectors[sector] == NULL) {
        if (path->dirty_count == path->dirty_capacity) {
            size_t capacity = path->dirty_capacity ? path->dirty_capacity * 2 : 64;
            size_t *grown = realloc(path->dirty, capacity * sizeof *grown);
            if (grown == NULL) return SQLITE_IOERR_NOMEM;
            path->dirty = grown;
            path->dirty_capacity = capacity;
        }
        pc_sector *entry = calloc(1, sizeof *entry);
        if (entry == NULL) return SQLITE_IOERR_NOMEM;
        int rc = pc_read_sector(real, sector, entry->durable);
        if (rc != SQLITE_OK) {
            free(entry);
            return rc;
        }
        // Past the durable size nothing is durable: only this session's writes (or a size hint's zeros) are there.
        sqlite3_int64 start = (sqlite3_int64)sector * PC_SECTOR;
        if (path->durable_size < start + PC_SECTOR) {
            size_t keep = path->durable_size > start ? (size_t)(path->durable_size - start) : 0;
            memset(entry->durable + keep, 0, PC_SECTOR - keep);
        }
        entry->lo = PC_SECTOR;
        entry->pending_lo = PC_SECTOR;
        path->sectors[sector] = entry;
        path->dirty[path->dirty_count++] = sector;
    }
    *out = path->sectors[sector];
    return SQLITE_OK;
}

// Records that the bytes [offset, offset + amount) are about to change (a write, or a truncation that removes them).
static int pc_note_change(pc_path *path, sqlite3_file *real, sqlite3_int64 offset, sqlite3_int64 amount) {
    if (amount <= 0) return SQLITE_OK;
    sqlite3_int64 end = offset + amount;
    for (size_t sector = (size_t)(offset / PC_SECTOR); (sqlite3_int64)sector * PC_SECTOR < end; sector++) {
        pc_sector *entry;
        int rc = pc_entry(path, real, sector, &entry);
        if (rc != SQLITE_OK) return rc;
        sqlite3_int64 start = (sqlite3_int64)sector * PC_SECTOR;
        uint32_t lo = offset > start ? (uint32_t)(offset - start) : 0;
        uint32_t hi = end < start + PC_SECTOR ? (uint32_t)(end - start) : PC_SECTOR;
        if (lo < entry->lo) entry->lo = lo;
        if (hi > entry->hi) entry->hi = hi;
        if (entry->pending != NULL) {
            if (lo < entry->pending_lo) entry->pending_lo = lo;
            if (hi > entry->pending_hi) entry->pending_hi = hi;
        }
    }
    return SQLITE_OK;
}

static void pc_drop_pending(pc_path *path) {
    for (size_t index = 0; index < path->dirty_count; index++) {
        pc_sector *entry = path->sectors[path->dirty[index]];
        free(entry->pending);
        entry->pending = NULL;
    }
}

static void pc_forget(pc_path *path) {
    for (size_t index = 0; index < path->dirty_count; index++) {
        pc_sector *entry = path->sectors[path->dirty[index]];
        free(entry->pending);
        free(entry);
        path->sectors[path->dirty[index]] = NULL;
    }
    path->dirty_count = 0;
}

// A successful sync: the snapshot taken when it began is durable; sectors written during it stay dirty.
static void pc_settle(pc_path *path) {
    size_t kept = 0;
    for (size_t index = 0; index < path->dirty_count; index++) {
        size_t sector = path->dirty[index];
        pc_sector *entry = path->sectors[sector];
        if (entry->pending == NULL) {
            // Dirtied while the sync ran: its `durable` was read then, and it was durable then.
            path->dirty[kept++] = sector;
        } else if (entry->pending_lo < entry->pending_hi) {
            memcpy(entry->durable, entry->pending, PC_SECTOR);
            entry->lo = entry->pending_lo;
            entry->hi = entry->pending_hi;
            free(entry->pending);
            entry->pending = NULL;
            path->dirty[kept++] = sector;
        } else {
            free(entry->pending);
            free(entry);
            path->sectors[sector] = NULL;
        }
    }
    path->dirty_count = kept;
}

static size_t pc_directory_length(const char *name) {
    const char *slash = strrchr(name, '/');
    return slash ? (size_t)(slash - name) : 0;
}

// A directory sync: every name created in `name`'s directory so far is durable.
static void pc_names_durable(const char *name) {
    size_t length = pc_directory_length(name);
    for (pc_path *path = pc_session.paths; path != NULL; path = path->next) {
        if (pc_directory_length(path->name) == length && strncmp(path->name, name, length) == 0) {
            path->name_durable = 1;
        }
    }
}

static pc_path *pc_find(const char *name) {
    for (pc_path *path = pc_session.paths; path != NULL; path = path->next) {
        if (strcmp(path->name, name) == 0) return path;
    }
    return NULL;
}

static int pc_in_session(const char *name) {
    return pc_session.active && name != NULL
        && strncmp(name, pc_session.directory, pc_session.directory_length) == 0
        && name[pc_session.directory_length] == '/';
}

// ---- The file methods ----

static int pc_close(sqlite3_file *file) {
    pc_file *p = (pc_file *)file;
    int rc = p->real->pMethods->xClose(p->real);
    if (p->path != NULL) {
        pthread_mutex_lock(&pc_mutex);
        p->path->open_files -= 1;
        pthread_mutex_unlock(&pc_mutex);
        p->path = NULL;
    }
    return rc;
}

static int pc_read(sqlite3_file *file, void *buffer, int amount, sqlite3_int64 offset) {
    pc_file *p = (pc_file *)file;
    if (p->path != NULL && atomic_load(&pc_cut)) {
        pc_refused();
        return SQLITE_IOERR_READ;
    }
    return p->real->pMethods->xRead(p->real, buffer, amount, offset);
}

static int pc_write(sqlite3_file *file, const void *buffer, int amount, sqlite3_int64 offset) {
    pc_file *p = (pc_file *)file;
    if (p->path == NULL) return p->real->pMethods->xWrite(p->real, buffer, amount, offset);
    pthread_mutex_lock(&pc_mutex);
    int rc;
    if (pc_power_gone_locked(p->path)) {
        pc_session.report.refused_after_cut += 1;
        rc = SQLITE_IOERR_WRITE;
    } else {
        pc_session.report.writes += 1;
        pc_session.report.main_writes += (uint64_t)p->path->is_main;
        rc = pc_note_change(p->path, p->real, offset, amount);
        if (rc == SQLITE_OK) rc = p->real->pMethods->xWrite(p->real, buffer, amount, offset);
    }
    pthread_mutex_unlock(&pc_mutex);
    return rc;
}

static int pc_truncate(sqlite3_file *file, sqlite3_int64 size) {
    pc_file *p = (pc_file *)file;
    if (p->path == NULL) return p->real->pMethods->xTruncate(p->real, size);
    pthread_mutex_lock(&pc_mutex);
    int rc;
    if (pc_power_gone_locked(p->path)) {
        pc_session.report.refused_after_cut += 1;
        rc = SQLITE_IOERR_TRUNCATE;
    } else {
        pc_session.report.truncations += 1;
        // Until a sync, the bytes cut off are still on disk: keep them to put back.
        sqlite3_int64 current = 0;
        rc = p->real->pMethods->xFileSize(p->real, &current);
        if (rc == SQLITE_OK && current > size) rc = pc_note_change(p->path, p->real, size, current - size);
        if (rc == SQLITE_OK) rc = p->real->pMethods->xTruncate(p->real, size);
    }
    pthread_mutex_unlock(&pc_mutex);
    return rc;
}

static int pc_sync(sqlite3_file *file, int flags) {
    pc_file *p = (pc_file *)file;
    if (p->path == NULL) return p->real->pMethods->xSync(p->real, flags);
    pc_path *path = p->path;
    pthread_mutex_lock(&path->sync_mutex);
    pthread_mutex_lock(&pc_mutex);
    if (pc_power_gone_locked(path)) {
        pc_session.report.refused_after_cut += 1;
        pthread_mutex_unlock(&pc_mutex);
        pthread_mutex_unlock(&path->sync_mutex);
        return SQLITE_IOERR_FSYNC;
    }
    pc_session.report.syncs += 1;
    // What this sync makes durable: every dirty sector as it is now, and the size.
    int rc = p->real->pMethods->xFileSize(p->real, &path->pending_size);
    for (size_t index = 0; rc == SQLITE_OK && index < path->dirty_count; index++) {
        pc_sector *entry = path->sectors[path->dirty[index]];
        entry->pending = malloc(PC_SECTOR);
        if (entry->pending == NULL) {
            rc = SQLITE_IOERR_NOMEM;
            break;
        }
        entry->pending_lo = PC_SECTOR;
        entry->pending_hi = 0;
        rc = pc_read_sector(p->real, path->dirty[index], entry->pending);
    }
    if (rc != SQLITE_OK) {
        pc_drop_pending(path);
        pthread_mutex_unlock(&pc_mutex);
        pthread_mutex_unlock(&path->sync_mutex);
        return rc;
    }
    pthread_mutex_unlock(&pc_mutex);

    // Without the global mutex: the next writer commits while this one syncs, as on a real disk.
    rc = p->real->pMethods->xSync(p->real, flags);

    pthread_mutex_lock(&pc_mutex);
    if (atomic_load(&pc_cut)) {
        // The power went before the sync returned: it made nothing durable.
        pc_session.report.syncs_interrupted += 1;
        pc_drop_pending(path);
        rc = SQLITE_IOERR_FSYNC;
    } else if (rc == SQLITE_OK) {
        pc_settle(path);
        path->durable_size = path->pending_size;
        if (path->is_main) pc_session.checkpointed = 1;
        if (p->syncs_directory) {
            p->syncs_directory = 0;
            pc_names_durable(path->name);
        }
    } else {
        pc_drop_pending(path);
    }
    pthread_mutex_unlock(&pc_mutex);
    pthread_mutex_unlock(&path->sync_mutex);
    return rc;
}

static int pc_file_size(sqlite3_file *file, sqlite3_int64 *size) {
    pc_file *p = (pc_file *)file;
    if (p->path != NULL && atomic_load(&pc_cut)) {
        pc_refused();
        return SQLITE_IOERR_FSTAT;
    }
    return p->real->pMethods->xFileSize(p->real, size);
}

static int pc_lock(sqlite3_file *file, int level) {
    pc_file *p = (pc_file *)file;
    if (p->path != NULL && atomic_load(&pc_cut)) {
        // Also what keeps the last connection's close from checkpointing after the cut.
        pc_refused();
        return SQLITE_IOERR_LOCK;
    }
    return p->real->pMethods->xLock(p->real, level);
}

static int pc_unlock(sqlite3_file *file, int level) {
    pc_file *p = (pc_file *)file;
    return p->real->pMethods->xUnlock(p->real, level);
}

static int pc_check_reserved_lock(sqlite3_file *file, int *reserved) {
    pc_file *p = (pc_file *)file;
    return p->real->pMethods->xCheckReservedLock(p->real, reserved);
}

static int pc_file_control(sqlite3_file *file, int op, void *argument) {
    pc_file *p = (pc_file *)file;
    // A size hint may grow the file (the only file control of the unix VFS that writes); growth is covered by
    // the model (past the durable size nothing is durable), but after the cut nothing may change.
    if (p->path != NULL && op == SQLITE_FCNTL_SIZE_HINT && atomic_load(&pc_cut)) {
        pc_refused();
        return SQLITE_IOERR_TRUNCATE;
    }
    return p->real->pMethods->xFileControl(p->real, op, argument);
}

static int pc_sector_size(sqlite3_file *file) {
    pc_file *p = (pc_file *)file;
    return p->real->pMethods->xSectorSize(p->real);
}

static int pc_device_characteristics(sqlite3_file *file) {
    pc_file *p = (pc_file *)file;
    return p->real->pMethods->xDeviceCharacteristics(p->real);
}

static int pc_shm_map(sqlite3_file *file, int page, int page_size, int extend, void volatile **mapped) {
    pc_file *p = (pc_file *)file;
    return p->real->pMethods->xShmMap(p->real, page, page_size, extend, mapped);
}

static int pc_shm_lock(sqlite3_file *file, int offset, int count, int flags) {
    pc_file *p = (pc_file *)file;
    return p->real->pMethods->xShmLock(p->real, offset, count, flags);
}

static void pc_shm_barrier(sqlite3_file *file) {
    pc_file *p = (pc_file *)file;
    p->real->pMethods->xShmBarrier(p->real);
}

static int pc_shm_unmap(sqlite3_file *file, int delete_flag) {
    pc_file *p = (pc_file *)file;
    return p->real->pMethods->xShmUnmap(p->real, delete_flag);
}

static int pc_fetch(sqlite3_file *file, sqlite3_int64 offset, int amount, void **mapped) {
    pc_file *p = (pc_file *)file;
    if (p->path != NULL && atomic_load(&pc_cut)) {
        // No mapping: SQLite then reads with xRead, which fails.
        *mapped = NULL;
        return SQLITE_OK;
    }
    return p->real->pMethods->xFetch(p->real, offset, amount, mapped);
}

static int pc_unfetch(sqlite3_file *file, sqlite3_int64 offset, void *mapped) {
    pc_file *p = (pc_file *)file;
    return p->real->pMethods->xUnfetch(p->real, offset, mapped);
}

// Version 3, as the unix VFS's posix methods on Linux; pc_open refuses a real file object of an older version.
static const sqlite3_io_methods pc_methods = {
    3,
    pc_close,
    pc_read,
    pc_write,
    pc_truncate,
    pc_sync,
    pc_file_size,
    pc_lock,
    pc_unlock,
    pc_check_reserved_lock,
    pc_file_control,
    pc_sector_size,
    pc_device_characteristics,
    pc_shm_map,
    pc_shm_lock,
    pc_shm_barrier,
    pc_shm_unmap,
    pc_fetch,
    pc_unfetch,
};

// ---- The VFS methods: all but xOpen and xDelete go to the unix VFS as they are ----

static int pc_tracked_type(int flags) {
    int type = flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_TEMP_DB | SQLITE_OPEN_TRANSIENT_DB
                        | SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_TEMP_JOURNAL | SQLITE_OPEN_SUBJOURNAL
                        | SQLITE_OPEN_SUPER_JOURNAL | SQLITE_OPEN_WAL);
    return type == SQLITE_OPEN_MAIN_DB || type == SQLITE_OPEN_WAL || type == SQLITE_OPEN_MAIN_JOURNAL
        || type == SQLITE_OPEN_SUPER_JOURNAL;
}

static int pc_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *file, int flags, int *out_flags) {
    (void)vfs;
    pc_file *p = (pc_file *)file;
    p->real = (sqlite3_file *)&p[1];
    p->path = NULL;
    p->syncs_directory = 0;
    file->pMethods = NULL;
    int rc;
    pthread_mutex_lock(&pc_mutex);
    if (!pc_tracked_type(flags) || !pc_in_session(name)) {
        pthread_mutex_unlock(&pc_mutex);
        rc = pc_root->xOpen(pc_root, name, p->real, flags, out_flags);
    } else if (atomic_load(&pc_cut)) {
        pc_session.report.refused_after_cut += 1;
        pthread_mutex_unlock(&pc_mutex);
        return SQLITE_IOERR;
    } else {
        // Under the mutex: whether this open creates the file is decided once, whichever thread opens first.
        int existed = access(name, F_OK) == 0;
        pc_path *path = pc_find(name);
        if (path == NULL) {
            path = calloc(1, sizeof *path);
            char *copy = strdup(name);
            if (path == NULL || copy == NULL) {
                free(path);
                free(copy);
                pthread_mutex_unlock(&pc_mutex);
                return SQLITE_NOMEM;
            }
            path->name = copy;
            path->is_main = (flags & SQLITE_OPEN_MAIN_DB) != 0;
            path->name_durable = 1;
            pthread_mutex_init(&path->sync_mutex, NULL);
            struct stat status;
            path->durable_size = existed && stat(name, &status) == 0 ? (sqlite3_int64)status.st_size : 0;
            path->next = pc_session.paths;
            pc_session.paths = path;
            pc_session.report.files += 1;
        }
        rc = pc_root->xOpen(pc_root, name, p->real, flags, out_flags);
        if (rc == SQLITE_OK && p->real->pMethods != NULL && p->real->pMethods->iVersion < 3) {
            // Not the unix VFS's posix methods: the shim could not forward every call.
            p->real->pMethods->xClose(p->real);
            p->real->pMethods = NULL;
            rc = SQLITE_CANTOPEN;
        }
        if (rc == SQLITE_OK) {
            if (!existed) {
                // Created now: nothing of it is durable, not even its name, until a sync says so.
                pc_forget(path);
                path->deleted = 0;
                path->durable_size = 0;
                path->name_durable = 0;
            }
            path->open_files += 1;
            p->path = path;
            int type = flags & (SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_SUPER_JOURNAL);
            p->syncs_directory = (flags & SQLITE_OPEN_CREATE) != 0 && type != 0;
        }
        pthread_mutex_unlock(&pc_mutex);
    }
    if (p->real->pMethods != NULL) file->pMethods = &pc_methods;
    return rc;
}

static int pc_delete(sqlite3_vfs *vfs, const char *name, int sync_directory) {
    (void)vfs;
    pthread_mutex_lock(&pc_mutex);
    if (pc_in_session(name)) {
        if (atomic_load(&pc_cut)) {
            pc_session.report.refused_after_cut += 1;
            pthread_mutex_unlock(&pc_mutex);
            return SQLITE_IOERR_DELETE;
        }
        pc_path *path = pc_find(name);
        if (path != NULL) {
            pc_forget(path);
            path->deleted = 1;
        }
    }
    int rc = pc_root->xDelete(pc_root, name, sync_directory);
    pthread_mutex_unlock(&pc_mutex);
    return rc;
}

static int pc_access(sqlite3_vfs *vfs, const char *name, int flags, int *result) {
    (void)vfs;
    return pc_root->xAccess(pc_root, name, flags, result);
}

static int pc_full_pathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    (void)vfs;
    return pc_root->xFullPathname(pc_root, name, size, out);
}

static void *pc_dl_open(sqlite3_vfs *vfs, const char *name) {
    (void)vfs;
    return pc_root->xDlOpen(pc_root, name);
}

static void pc_dl_error(sqlite3_vfs *vfs, int size, char *message) {
    (void)vfs;
    pc_root->xDlError(pc_root, size, message);
}

static void (*pc_dl_sym(sqlite3_vfs *vfs, void *library, const char *symbol))(void) {
    (void)vfs;
    return pc_root->xDlSym(pc_root, library, symbol);
}

static void pc_dl_close(sqlite3_vfs *vfs, void *library) {
    (void)vfs;
    pc_root->xDlClose(pc_root, library);
}

static int pc_randomness(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    return pc_root->xRandomness(pc_root, size, out);
}

static int pc_sleep(sqlite3_vfs *vfs, int microseconds) {
    (void)vfs;
    return pc_root->xSleep(pc_root, microseconds);
}

static int pc_current_time(sqlite3_vfs *vfs, double *now) {
    (void)vfs;
    return pc_root->xCurrentTime(pc_root, now);
}

static int pc_get_last_error(sqlite3_vfs *vfs, int size, char *message) {
    (void)vfs;
    return pc_root->xGetLastError(pc_root, size, message);
}

static int pc_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *now) {
    (void)vfs;
    return pc_root->xCurrentTimeInt64(pc_root, now);
}

static int pc_set_system_call(sqlite3_vfs *vfs, const char *name, sqlite3_syscall_ptr call) {
    (void)vfs;
    return pc_root->xSetSystemCall(pc_root, name, call);
}

static sqlite3_syscall_ptr pc_get_system_call(sqlite3_vfs *vfs, const char *name) {
    (void)vfs;
    return pc_root->xGetSystemCall(pc_root, name);
}

static const char *pc_next_system_call(sqlite3_vfs *vfs, const char *name) {
    (void)vfs;
    return pc_root->xNextSystemCall(pc_root, name);
}

static sqlite3_vfs pc_vfs = {
    .iVersion = 3,
    .zName = "eventqueue-powercut",
    .xOpen = pc_open,
    .xDelete = pc_delete,
    .xAccess = pc_access,
    .xFullPathname = pc_full_pathname,
    .xDlOpen = pc_dl_open,
    .xDlError = pc_dl_error,
    .xDlSym = pc_dl_sym,
    .xDlClose = pc_dl_close,
    .xRandomness = pc_randomness,
    .xSleep = pc_sleep,
    .xCurrentTime = pc_current_time,
    .xGetLastError = pc_get_last_error,
    .xCurrentTimeInt64 = pc_current_time_int64,
    .xSetSystemCall = pc_set_system_call,
    .xGetSystemCall = pc_get_system_call,
    .xNextSystemCall = pc_next_system_call,
};

// ---- The public API ----

int pcvfs_install(void) {
    pthread_mutex_lock(&pc_mutex);
    int rc = SQLITE_OK;
    if (pc_root == NULL) {
        sqlite3_vfs *root = sqlite3_vfs_find("unix");
        if (root == NULL || root->iVersion < 3) {
            rc = SQLITE_ERROR;
        } else {
            pc_vfs.szOsFile = (int)sizeof(pc_file) + root->szOsFile;
            pc_vfs.mxPathname = root->mxPathname;
            rc = sqlite3_vfs_register(&pc_vfs, 0);
            if (rc == SQLITE_OK) pc_root = root;
        }
    }
    pthread_mutex_unlock(&pc_mutex);
    return rc;
}

int pcvfs_begin(const char *directory) {
    char *resolved = realpath(directory, NULL);
    if (resolved == NULL) return -1;
    pthread_mutex_lock(&pc_mutex);
    sqlite3_vfs *previous = sqlite3_vfs_find(NULL);
    if (pc_session.active || pc_root == NULL || previous == NULL || sqlite3_vfs_register(&pc_vfs, 1) != SQLITE_OK) {
        pthread_mutex_unlock(&pc_mutex);
        free(resolved);
        return -1;
    }
    memset(&pc_session, 0, sizeof pc_session);
    pc_session.directory = resolved;
    pc_session.directory_length = strlen(resolved);
    pc_session.previous_default = previous == &pc_vfs ? pc_root : previous;
    pc_session.active = 1;
    atomic_store(&pc_cut, 0);
    pthread_mutex_unlock(&pc_mutex);
    return 0;
}

void pcvfs_cut_after(uint64_t operations, pcvfs_count count) {
    pthread_mutex_lock(&pc_mutex);
    if (operations == 0) {
        pc_cut_locked(0);
    } else {
        pc_session.countdown = operations;
        pc_session.count = count;
        pc_session.checkpointed = 0;
    }
    pthread_mutex_unlock(&pc_mutex);
}

void pcvfs_cut(void) {
    pthread_mutex_lock(&pc_mutex);
    pc_cut_locked(0);
    pthread_mutex_unlock(&pc_mutex);
}

int pcvfs_is_cut(void) {
    return atomic_load(&pc_cut);
}

// SplitMix64 (as Tests/EventQueueTestSupport/SplitMix64.swift), so that a seed replays the finish's choices.
static uint64_t pc_next_random(uint64_t *state) {
    *state += 0x9E3779B97F4A7C15ULL;
    uint64_t mixed = *state;
    mixed = (mixed ^ (mixed >> 30)) * 0xBF58476D1CE4E5B9ULL;
    mixed = (mixed ^ (mixed >> 27)) * 0x94D049BB133111EBULL;
    return mixed ^ (mixed >> 31);
}

enum pc_fate { PC_KEPT, PC_LOST, PC_TORN };

// Gives one closed file what the disk keeps of it.
static void pc_apply(pc_path *path, pcvfs_loss loss, uint64_t *random, pcvfs_report *report) {
    if (path->deleted) return;
    if (!path->name_durable && (loss == PCVFS_LOSE_ALL || (pc_next_random(random) & 1))) {
        // Its directory entry never reached the disk.
        if (unlink(path->name) != 0 && errno != ENOENT) report->finish_errors += 1;
        report->files_lost += 1;
        report->sectors_unsynced += path->dirty_count;
        report->sectors_lost += path->dirty_count;
        if (path->is_main) report->main_sectors_unsynced += path->dirty_count;
        return;
    }
    int descriptor = open(path->name, O_RDWR | O_CLOEXEC);
    struct stat status;
    if (descriptor < 0 || fstat(descriptor, &status) != 0) {
        report->finish_errors += 1;
        if (descriptor >= 0) close(descriptor);
        return;
    }
    sqlite3_int64 current = (sqlite3_int64)status.st_size;
    sqlite3_int64 final = path->durable_size;
    if (loss != PCVFS_LOSE_ALL && (pc_next_random(random) & 1)) final = current;
    if (current > final) report->bytes_cut_off += (uint64_t)(current - final);
    for (size_t index = 0; index < path->dirty_count; index++) {
        size_t sector = path->dirty[index];
        pc_sector *entry = path->sectors[sector];
        report->sectors_unsynced += 1;
        enum pc_fate fate = PC_LOST;
        if (loss == PCVFS_RANDOM_SECTORS) {
            fate = (pc_next_random(random) & 1) ? PC_KEPT : PC_LOST;
        } else if (loss == PCVFS_TORN_SECTORS) {
            fate = (enum pc_fate)(pc_next_random(random) % 3);
        }
        report->sectors_kept += fate == PC_KEPT;
        report->sectors_lost += fate == PC_LOST;
        report->sectors_torn += fate == PC_TORN;
        report->main_sectors_unsynced += (uint64_t)path->is_main;
        sqlite3_int64 start = (sqlite3_int64)sector * PC_SECTOR;
        if (entry->lo >= entry->hi || start + entry->lo >= final) continue;
        unsigned char bytes[PC_SECTOR];
        ssize_t count = pread(descriptor, bytes, PC_SECTOR, start);
        if (count < 0) {
            report->finish_errors += 1;
            continue;
        }
        memset(bytes + count, 0, PC_SECTOR - (size_t)count);
        for (uint32_t offset = entry->lo; offset < entry->hi; offset++) {
            if (fate == PC_LOST || start + offset >= current) {
                // Lost, or cut off by a truncation that is itself lost (the file keeps its durable size).
                bytes[offset] = entry->durable[offset];
            } else if (fate == PC_TORN) {
                bytes[offset] = (unsigned char)pc_next_random(random);
            }
        }
        sqlite3_int64 end = start + entry->hi < final ? start + entry->hi : final;
        size_t length = (size_t)(end - start - entry->lo);
        if (pwrite(descriptor, bytes + entry->lo, length, start + entry->lo) != (ssize_t)length) {
            report->finish_errors += 1;
        }
    }
    if (ftruncate(descriptor, final) != 0) report->finish_errors += 1;
    close(descriptor);
}

int pcvfs_finish(pcvfs_loss loss, uint64_t seed, pcvfs_report *report) {
    pthread_mutex_lock(&pc_mutex);
    if (!pc_session.active) {
        pthread_mutex_unlock(&pc_mutex);
        memset(report, 0, sizeof *report);
        return -1;
    }
    pc_cut_locked(0);
    pcvfs_report result = pc_session.report;
    for (pc_path *path = pc_session.paths; path != NULL; path = path->next) {
        if (path->open_files > 0) result.files_still_open += 1;
    }
    if (result.files_still_open > 0) {
        // A connection could still write or checkpoint: nothing would be a valid cut. The session stays.
        pthread_mutex_unlock(&pc_mutex);
        *report = result;
        return -1;
    }
    uint64_t random = seed;
    for (pc_path *path = pc_session.paths; path != NULL; path = path->next) {
        pc_apply(path, loss, &random, &result);
    }
    // The wal-index is memory after a reboot: recovery rebuilds it from the WAL.
    for (pc_path *path = pc_session.paths; path != NULL; path = path->next) {
        if (!path->is_main) continue;
        size_t length = strlen(path->name);
        char *shm = malloc(length + 5);
        if (shm == NULL) {
            result.finish_errors += 1;
            continue;
        }
        memcpy(shm, path->name, length);
        memcpy(shm + length, "-shm", 5);
        if (unlink(shm) != 0 && errno != ENOENT) result.finish_errors += 1;
        free(shm);
    }
    while (pc_session.paths != NULL) {
        pc_path *path = pc_session.paths;
        pc_session.paths = path->next;
        pc_forget(path);
        free(path->sectors);
        free(path->dirty);
        pthread_mutex_destroy(&path->sync_mutex);
        free(path->name);
        free(path);
    }
    // Connections opened during the session keep this VFS object (static), and it passes their calls through.
    if (sqlite3_vfs_register(pc_session.previous_default, 1) != SQLITE_OK) result.finish_errors += 1;
    free(pc_session.directory);
    memset(&pc_session, 0, sizeof pc_session);
    atomic_store(&pc_cut, 0);
    pthread_mutex_unlock(&pc_mutex);
    *report = result;
    return result.finish_errors > 0 ? -1 : 0;
}
