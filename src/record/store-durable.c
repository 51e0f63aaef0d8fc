/* store-durable.c - the store's files beside the database (see
 * store-internal.h): the clean-shutdown marker PATH-open and its syncs,
 * the WAL's sync that makes a commit durable, the PATH-reserve space
 * for the runs' final updates, and the check that refuses a database
 * that was lost while its history remains. store.c's open and close
 * call these; the argument for each sync is in its comment.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <string.h>
#include <sys/file.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "record/store.h"
#include "record/store-internal.h"
#include "lib/log.h"
#include "lib/util.h"

/* Space kept for the outcome of the runs (PATH-reserve): a state dir
 * that fills while a job runs must still take its final update, so the
 * store holds this much on disk and gives it back when that update
 * does not fit (store_run_finish()). A final update without output
 * rewrites a handful of pages; this is many times that. */
#define STORE_RESERVE_BYTES (256 * 1024)

/* Close fd if open; returns -1 for the caller to store. */
static int close_fd(int fd)
{
        if (fd >= 0)
                close(fd);
        return -1;
}

/* s->error says what failed and errno's why (a job that can chmod the
 * caller's state dir makes these fail): -errno. */
static int fail_errno(struct store *s, const char *what)
{
        int r = -errno;
        _cleanup_free_ char *msg = xasprintf("%s: %s", what, strerror(-r));
        return store_fail_msg(s, r, msg);
}

static char *sibling(const char *path, const char *suffix)
{
        return xasprintf("%s%s", path, suffix);
}

/* Make PATH-reserve if it is missing (best effort: a full disk leaves
 * it for a later open). */
void store_ensure_reserve(const char *path)
{
        _cleanup_free_ char *reserve = sibling(path, "-reserve");
        if (access(reserve, F_OK) == 0)
                return;
        _cleanup_free_ char *tmp = xasprintf("%s.%d", reserve, (int)getpid());
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return;
        /* allocated blocks, not a hole: the point is to hold real space */
        bool ok = posix_fallocate(fd, 0, STORE_RESERVE_BYTES) == 0;
        ok = close(fd) == 0 && ok;
        if (!ok || rename(tmp, reserve) < 0)
                (void)unlink(tmp);
}

int store_release_reserve(struct store *s)
{
        _cleanup_free_ char *reserve = sibling(s->path, "-reserve");
        return unlink(reserve) < 0 ? -errno : 0;
}

/* Does a history live next to path, although the database is missing
 * or empty? Recorded blobs or a WAL with content say one did: the
 * database was deleted or truncated, and a new empty one would hide
 * that every run is gone. */
static bool history_remains(const char *path, const char **ret_what)
{
        _cleanup_free_ char *copy = xstrdup(path);
        _cleanup_free_ char *blobs = xasprintf("%s/blobs", dirname(copy));
        _cleanup_free_ char *wal = sibling(path, "-wal");
        struct stat st;

        if (stat(wal, &st) == 0 && st.st_size > 0) {
                *ret_what = "its write-ahead log";
                return true;
        }
        DIR *d = opendir(blobs);
        bool found = false;
        for (struct dirent *de; d && !found && (de = readdir(d));)
                found = strlen(de->d_name) == 2 && isxdigit((unsigned char)de->d_name[0]) &&
                        isxdigit((unsigned char)de->d_name[1]);
        if (d)
                closedir(d);
        if (found)
                *ret_what = "its blob store";
        return found;
}

/* Refuse a missing or empty database whose history remains. */
int store_check_not_lost(struct store *s)
{
        _cleanup_free_ char *copy = xstrdup(s->path);
        const char *what = NULL;
        struct stat st;

        if ((stat(s->path, &st) == 0 && st.st_size > 0) || !history_remains(s->path, &what))
                return 0;
        _cleanup_free_ char *msg = xasprintf(
                "the database is %s, but %s remains: the history was lost or truncated; "
                "restore the database from a backup, or move %s away to start a new one",
                access(s->path, F_OK) == 0 ? "empty" : "missing", what, dirname(copy));
        return store_fail_msg(s, -ENODATA, msg);
}

/* The clean-shutdown marker: PATH-open holds one byte, '1' while some
 * hutch has the store open for writing, and every such hutch holds a
 * shared flock on it. An opener that gets the lock exclusively is
 * alone; if it then finds '1', the last writer died (kill -9, a crash,
 * power loss) with the store open, and the database is checked before
 * anything is written into it. The last one to close writes '0'. The
 * sandbox's init inherits the descriptor but dies with its supervisor,
 * so it never keeps a dead writer's lock. */
int store_mark_open(struct store *s, bool *ret_unclean)
{
        _cleanup_free_ char *marker = sibling(s->path, "-open");
        char c = '0';

        *ret_unclean = false;
        s->open_fd = open(marker, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (s->open_fd < 0)
                return 0;       /* cannot tell: no check, as before */
        if (flock(s->open_fd, LOCK_EX | LOCK_NB) == 0) {
                ssize_t n = pread(s->open_fd, &c, 1, 0);
                if (n == 1 && c == '1')
                        *ret_unclean = true;
                else {
                        /* not synced here, before the job: by the first
                         * durable commit (store_durable_begin()) */
                        if (pwrite(s->open_fd, "1", 1, 0) != 1)
                                log_debug("store: cannot set the open marker: %m");
                        s->marker_unsynced = true;
                        s->marker_created = n != 1;
                }
        }
        /* a holder of the exclusive lock keeps it only this long */
        if (flock(s->open_fd, LOCK_SH) < 0)
                s->open_fd = close_fd(s->open_fd);
        return 0;
}

bool store_wal_exists(const char *path)
{
        _cleanup_free_ char *wal = sibling(path, "-wal");
        return access(wal, F_OK) == 0;
}

/* Can the next fdatasync(2) of the WAL make the marker's '1' durable
 * too, once the byte is on the device (written, not yet flushed)?
 *
 * The argument. A volatile write cache loses what it holds at a power
 * loss; a cache FLUSH (REQ_PREFLUSH) makes durable every write the
 * device completed before it, whichever file it belongs to: the flush
 * is device-wide. The marker and the WAL are siblings in one directory,
 * so on one filesystem and, for ext4 and XFS (no multi-device data
 * placement), one data device. sync_file_range(WAIT_BEFORE | WRITE |
 * WAIT_AFTER) returns once the byte's write has completed on the device
 * (only data: it makes no metadata durable, so it is used only when the
 * marker already existed, its size and blocks unchanged by a one-byte
 * overwrite in place; a new marker keeps fdatasync and the directory's
 * fsync). What remains is that the WAL's fdatasync, which starts after
 * that, always issues a flush after it, even with nothing to journal:
 *  - ext4 (fs/ext4/fsync.c, ext4_sync_file()): with a journal, the
 *    transaction the inode needs is committed by jbd2 with its commit
 *    block written REQ_PREFLUSH (an external journal: jbd2 flushes the
 *    data device first), and when that transaction is already
 *    committed, or past its flush, jbd2_trans_will_send_data_barrier()
 *    says so and ext4 calls blkdev_issue_flush() itself (needs_barrier);
 *    without a journal ext4_fsync_nojournal() asks for the same flush.
 *    With data=journal the marker's byte is in the running transaction,
 *    which the WAL's sync commits (REQ_PREFLUSH). Only the barrier=0
 *    (nobarrier) mount option skips the flush, and then the WAL's own
 *    fdatasync is not durable either.
 *  - XFS (fs/xfs/xfs_file.c, xfs_file_fsync()): flushes the data device
 *    when the log is external, forces the log (REQ_PREFLUSH) when the
 *    inode has something logged, and otherwise calls blkdev_issue_flush()
 *    itself ("!log_flushed"); realtime files (both inherit the flag from
 *    the directory) get the realtime device's flush.
 * So after the WAL's fdatasync both are durable, as after two
 * fdatasyncs. Before it, neither is guaranteed in either case, and the
 * order between the marker and the run's earlier WAL frames was never
 * guaranteed (they are committed without a sync); the database file is
 * written only by a checkpoint, which syncs the WAL (a flush) first.
 * Other filesystems (btrfs, whose fsync of an inode with nothing to log
 * need not flush; network and FUSE filesystems, where "the device" is
 * not one) keep the marker's own fdatasync. */
static bool flush_covers_marker(int fd)
{
        struct statfs sf;

        if (fstatfs(fd, &sf) < 0)
                return false;
        return sf.f_type == EXT4_SUPER_MAGIC || sf.f_type == XFS_SUPER_MAGIC;
}

/* Sync the marker's '1' (and its directory entry, when new) if a commit
 * is about to be synced: see store_durable_begin(). An existing marker
 * on ext4 or XFS is only written to the device here, and made durable
 * by the flush of the WAL's sync that follows (flush_covers_marker()):
 * one device flush per run, not two. */
void store_sync_marker(struct store *s)
{
        if (s->open_fd < 0 || !s->marker_unsynced)
                return;
        if (!s->marker_created && flush_covers_marker(s->open_fd) &&
            sync_file_range(s->open_fd, 0, 0,
                            SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                            SYNC_FILE_RANGE_WAIT_AFTER) == 0) {
                s->marker_unsynced = false;
                s->marker_unflushed = true;
                return;
        }
        if (fdatasync(s->open_fd) < 0)
                return;
        if (s->marker_created) {
                _cleanup_free_ char *copy = xstrdup(s->path);
                _cleanup_close_ int dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0 || fsync(dfd) < 0)
                        return;
        }
        s->marker_unsynced = s->marker_created = false;
}

void store_durable_begin(struct store *s)
{
        store_sync_marker(s);
}

/* Not PRAGMA synchronous = FULL for the commit: SQLite would then sync
 * the directory too, on the first WAL sync of every connection (it
 * cannot tell that the WAL it opened was already there), a third disk
 * flush per run. The WAL's frames are written (not yet synced) when the
 * commit returns, so syncing the file gives the same guarantee; the
 * directory is synced only when this connection created the WAL. */
int store_durable_end(struct store *s, int r)
{
        if (r < 0)
                return r;
        _cleanup_free_ char *wal = sibling(s->path, "-wal");
        _cleanup_close_ int fd = open(wal, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno != ENOENT)
                return fail_errno(s, "cannot open the write-ahead log to sync it");
        if (fd < 0) {
                /* no WAL: committed to the database; the marker's flush
                 * is then its own */
                if (s->marker_unflushed && fdatasync(s->open_fd) == 0)
                        s->marker_unflushed = false;
                return 0;
        }
        if (fdatasync(fd) < 0)
                return fail_errno(s, "cannot sync the write-ahead log");
        s->marker_unflushed = false;    /* the device's flush covered it */
        if (s->wal_created) {
                _cleanup_free_ char *copy = xstrdup(s->path);
                _cleanup_close_ int dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0 || fsync(dfd) < 0)
                        return fail_errno(s, "cannot sync the state dir");
                s->wal_created = false;
        }
        return r;
}

void store_mark_closed(struct store *s)
{
        if (s->open_fd < 0)
                return;
        if (flock(s->open_fd, LOCK_EX | LOCK_NB) == 0 && pwrite(s->open_fd, "0", 1, 0) != 1)
                log_debug("store: cannot clear the open marker: %m");
        /* explicitly: a child that inherited the descriptor (a sandbox
         * still being torn down) must not keep the lock after we close */
        (void)flock(s->open_fd, LOCK_UN);
        s->open_fd = close_fd(s->open_fd);
}
