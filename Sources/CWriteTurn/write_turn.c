#define _GNU_SOURCE
#include "write_turn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// The line's invariants.
//
// The page is shared with every writer of the queue's group, so each field is a claim, not a fact. Honest writers
// keep these invariants; a reader repairs what breaks them and otherwise stops using the line for one write:
//
// - `next` is the next ticket to draw (`fetch_add` by a writer joining the line). Tickets are unsigned 32-bit and
//   wrap; every comparison is modular.
// - `serving` is the ticket whose turn it is. The turn is held or awaited exactly when `serving != next`; honestly
//   `next - serving` is the number of tickets drawn and not yet done, far below EQ_TURN_SLOTS. Only the holder
//   moves it on (release), or a waiter that found the tickets before its own dead (a pass-over), always by
//   compare-and-swap from the value it read, so a stale decision never moves it twice. `serving` ahead of `next` is
//   impossible and is repaired by moving it back to `next`; `serving` more than EQ_TURN_SLOTS behind is repaired by
//   the first waiter that looks (it examines at most the EQ_TURN_SLOTS tickets before its own).
// - A ticket's owner holds an OFD lock on byte `EQ_TURN_PAGE_SIZE + ticket` from before it waits until after it
//   hands the turn on or leaves. The kernel drops it when the owner dies, so an unlocked byte means nobody owns the
//   ticket (or its owner is between drawing and locking: microseconds, which is why a waiter believes it only at
//   its second look a slice later, or at once when the ticket has been served for longer than the stale limit).
// - `served_at` is when `serving` last moved to a drawn ticket or was taken (CLOCK_MONOTONIC ns, one clock for the
//   whole host). Set by whoever moves `serving` and by the new holder; 0 when the ticket served had not been drawn
//   (an empty line: its clock starts when it is). A served ticket whose owner is alive and whose `served_at`
//   is older than the stale limit (or in the future: garbage, or another time namespace) belongs to a stopped or
//   stuck process: writers go around it (EQ_TURN_STALE) instead of waiting, and start waiting in line again once
//   it hands on. 0 means unknown; a reader that finds it so starts the clock.
// - `abandoned[ticket % SLOTS] == ticket + 1` marks a ticket whose waiter left before its turn: whoever serves it
//   passes straight over it. A false mark only makes a live waiter write without the line once.
// - `wake[slot]` is bumped when the slot's ticket is served (a futex word). Spurious wake-ups are harmless.
// - The counters (`handoffs`, `passed_over`, `repairs`, `bypasses`, `last_turn_at`) are statistics for `status`,
//   `check` and `/metrics`; nothing decides anything from them.
// - `magic` names the layout. A page of an older layout (1.3.0's version 2), of no layout (zeros, garbage) or a
//   file shorter than a page is reset to an empty line by the next writer; a newer layout is left alone (this
//   release then writes without a line).
//
// What a reader must assume: any value can change between two loads, and none is trusted for more than one
// decision. Nothing here can make a writer fail or wait past its timeout: every wait is a futex wait bounded by
// the deadline, every lock call is non-blocking (F_OFD_SETLK, F_OFD_GETLK; no flock), and the model test
// (Tests/CWriteTurnModel) checks it at every kernel call against writers that die or stop and a hostile group
// member. The worst a group member can do is make writers write without the line (unordered, as writers of other
// languages always do), or truncate the file between a writer's size check and its access to the page (SIGBUS,
// as with SQLite's `-shm`; write_turn.h).
//
// Why not a robust, process-shared pthread mutex (the first design): its word holds a thread id that the kernel looks up in the waiter's PID namespace, any value a group
// member writes there is taken for an owner until that owner dies, and its layout is glibc's, not ours.

// "EQTURN" and the layout's version. Version 2 (1.3.0) cleared the served time while handing on and locked one
// byte per slot.
static const uint64_t eq_turn_magic = 0x45515455524e0003ULL;
static const uint64_t eq_turn_magic_name = 0x45515455524e0000ULL;
static const uint64_t eq_turn_magic_version_mask = 0xffffULL;
// How long a waiter sleeps before looking at the line again (a lost wake-up costs at most this).
static const int64_t eq_turn_slice_ns = 10000000;

// All zero but `magic` is the empty line.
struct eq_turn_page {
    _Atomic uint64_t magic;
    _Atomic uint32_t next;
    _Atomic uint32_t serving;
    _Atomic int64_t served_at;
    _Atomic uint64_t handoffs;
    _Atomic uint64_t passed_over;
    _Atomic int64_t last_turn_at;
    _Atomic uint64_t repairs;
    _Atomic uint64_t bypasses;
    _Atomic uint32_t wake[EQ_TURN_SLOTS];
    _Atomic uint32_t abandoned[EQ_TURN_SLOTS];
};

_Static_assert(sizeof(struct eq_turn_page) <= EQ_TURN_PAGE_SIZE, "the page holds the layout");
_Static_assert(offsetof(struct eq_turn_page, wake) == 64, "the head is 64 bytes");

static int64_t eq_system_now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
}

static int64_t eq_system_file_size(int descriptor) {
    struct stat status;
    return fstat(descriptor, &status) == 0 ? (int64_t)status.st_size : -1;
}

static int eq_system_truncate(int descriptor, int64_t size) { return ftruncate(descriptor, (off_t)size); }

static int eq_system_lock(int descriptor, int command, struct flock *range) {
    return fcntl(descriptor, command, range);
}

static void eq_system_wait(void *word, uint32_t expected, int64_t timeout_ns) {
    struct timespec relative = {.tv_sec = timeout_ns / 1000000000LL, .tv_nsec = timeout_ns % 1000000000LL};
    syscall(SYS_futex, word, FUTEX_WAIT, expected, &relative, NULL, 0);
}

static void eq_system_wake(void *word) { syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0); }

static void eq_system_yield(void) { sched_yield(); }

const eq_turn_ops eq_turn_system = {
    .now_ns = eq_system_now_ns,
    .file_size = eq_system_file_size,
    .truncate = eq_system_truncate,
    .lock = eq_system_lock,
    .wait = eq_system_wait,
    .wake = eq_system_wake,
    .yield = eq_system_yield,
};

static int64_t eq_now_ns(const eq_turn *turn) { return turn->ops->now_ns(); }

// The byte whose lock says that `ticket` has a live owner.
static int eq_ticket_lock(const eq_turn *turn, uint32_t ticket, short type, int command) {
    struct flock range = {
        .l_type = type, .l_whence = SEEK_SET, .l_start = EQ_TURN_PAGE_SIZE + (off_t)ticket, .l_len = 1, .l_pid = 0};
    if (turn->ops->lock(turn->descriptor, command, &range) != 0) return -1;
    return command == F_OFD_GETLK ? range.l_type != F_UNLCK : 0;
}

static int eq_ticket_alive(const eq_turn *turn, uint32_t ticket) {
    return eq_ticket_lock(turn, ticket, F_WRLCK, F_OFD_GETLK) == 1;
}

// Whether the file still has its page: touching a mapped page past the end of a truncated file is SIGBUS.
static int eq_file_has_page(const eq_turn *turn) {
    return turn->ops->file_size(turn->descriptor) >= EQ_TURN_PAGE_SIZE;
}

// Makes a page of no layout, an older one or a truncated file an empty line of this layout. A newer layout is
// left alone. Returns whether the page is usable now.
static int eq_adopt(struct eq_turn_page *page) {
    uint64_t seen = atomic_load(&page->magic);
    if (seen == eq_turn_magic) return 1;
    int newer = (seen & ~eq_turn_magic_version_mask) == eq_turn_magic_name
        && (seen & eq_turn_magic_version_mask) > (eq_turn_magic & eq_turn_magic_version_mask);
    if (newer) return 0;
    if (!atomic_compare_exchange_strong(&page->magic, &seen, eq_turn_magic)) {
        return atomic_load(&page->magic) == eq_turn_magic;
    }
    // This process won the reset: an empty line, counted from zero. Whoever drew a ticket of the old page is
    // passed over once. (`abandoned` is left as it is: a stale mark names one ticket in 2^32.)
    atomic_store(&page->serving, atomic_load(&page->next));
    atomic_store(&page->served_at, 0);
    atomic_store(&page->handoffs, 0);
    atomic_store(&page->passed_over, 0);
    atomic_store(&page->last_turn_at, 0);
    atomic_store(&page->bypasses, 0);
    atomic_store(&page->repairs, seen != 0);
    return 1;
}

// The page, when the file still has it and it holds this layout; NULL otherwise. With `repair`, a short file is
// sized again and a page of no layout or an older one adopted (before a write only: giving the turn back after
// the commit touches the page as little as it can).
static struct eq_turn_page *eq_page(const eq_turn *turn, int repair) {
    struct eq_turn_page *page = turn->page;
    if (page == NULL) return NULL;
    if (!repair) {
        if (!eq_file_has_page(turn)) return NULL;
        return atomic_load(&page->magic) == eq_turn_magic ? page : NULL;
    }
    // No lock around the sizing: sizing a short file to the page is the same whoever does it, or how often, and a
    // lock there (a blocking flock until 1.4.0) lets a group member that holds it stop every writer for good.
    if (!eq_file_has_page(turn)) {
        if (turn->ops->truncate(turn->descriptor, EQ_TURN_PAGE_SIZE) != 0 || !eq_file_has_page(turn)) return NULL;
    }
    return eq_adopt(page) ? page : NULL;
}

// `serving` was just set to `ticket` by the caller: pass over tickets whose waiters left, then wake the one served.
static void eq_serve(const eq_turn *turn, struct eq_turn_page *page, uint32_t ticket) {
    atomic_store(&page->served_at, eq_now_ns(turn));
    while (atomic_load(&page->abandoned[ticket % EQ_TURN_SLOTS]) == ticket + 1) {
        uint32_t expected = ticket;
        if (!atomic_compare_exchange_strong(&page->serving, &expected, ticket + 1)) return;
        ticket += 1;
    }
    atomic_fetch_add(&page->wake[ticket % EQ_TURN_SLOTS], 1);
    // Nobody has drawn the ticket served yet: whoever draws it does so after `serving` moved (both orders are
    // sequentially consistent) and finds it served at its first look, so there is no one to wake. A writer alone
    // saves a system call per write (issue 34). Its served time goes back to 0 (unknown) until then: left at
    // now, the ticket drawn after an idle second would look served for a second, and a writer arriving beside its
    // owner would take it for a dead or stopped holder (passing over the first arrival, or going around it).
    if (atomic_load(&page->next) == ticket) {
        atomic_store(&page->served_at, 0);
        return;
    }
    turn->ops->wake(&page->wake[ticket % EQ_TURN_SLOTS]);
}

// Moves `serving` from `from` (as read) to `to`, passing over the tickets between: their owners died or the value
// was not a real ticket. Counted as passed-over holders, or as a repair when the stretch was longer than any
// honest line.
static void eq_pass_over(const eq_turn *turn, struct eq_turn_page *page, uint32_t from, uint32_t to) {
    uint32_t expected = from;
    if (!atomic_compare_exchange_strong(&page->serving, &expected, to)) return;
    uint32_t skipped = to - from;
    if (skipped > EQ_TURN_SLOTS) {
        atomic_fetch_add(&page->repairs, 1);
    } else {
        atomic_fetch_add(&page->passed_over, skipped);
    }
    eq_serve(turn, page, to);
}

// The first ticket in [from, to) with a live owner, or `to`. Tickets more than EQ_TURN_SLOTS before `to` are not
// looked at: no honest line is that long.
static uint32_t eq_first_live(const eq_turn *turn, uint32_t from, uint32_t to) {
    if ((uint32_t)(to - from) > EQ_TURN_SLOTS) from = to - EQ_TURN_SLOTS;
    for (uint32_t ticket = from; ticket != to; ticket++) {
        if (eq_ticket_alive(turn, ticket)) return ticket;
    }
    return to;
}

static int eq_is_stale(int64_t since, int64_t now, int64_t stale_ns) {
    return since != 0 && (since > now || now - since > stale_ns);
}

// Leaves the line without the turn: marks the ticket so that whoever serves it passes over it, and if it was
// served meanwhile, hands it on.
static void eq_leave(eq_turn *turn, struct eq_turn_page *page, uint32_t ticket) {
    atomic_store(&page->abandoned[ticket % EQ_TURN_SLOTS], ticket + 1);
    eq_ticket_lock(turn, ticket, F_UNLCK, F_OFD_SETLK);
    uint32_t expected = ticket;
    if (atomic_compare_exchange_strong(&page->serving, &expected, ticket + 1)) eq_serve(turn, page, ticket + 1);
}

// Before drawing a ticket: repair a `serving` ahead of every ticket, pass over a holder that died (its byte
// unlocked long after it was served), and go around a live holder past the stale limit (EQ_TURN_STALE) instead of
// queueing behind a stopped process. Returns EQ_TURN_ACQUIRED when the caller should draw.
static int eq_clear_the_way(const eq_turn *turn, struct eq_turn_page *page, int64_t now, int64_t stale_ns) {
    for (int round = 0; round < 4; round++) {
        uint32_t serving = atomic_load(&page->serving);
        uint32_t next = atomic_load(&page->next);
        if ((int32_t)(next - serving) < 0) {
            eq_pass_over(turn, page, serving, next);
            continue;
        }
        // An empty line, or one far too long to be honest (the first waiter's look repairs it).
        if (serving == next || next - serving > EQ_TURN_SLOTS) return EQ_TURN_ACQUIRED;
        int64_t since = atomic_load(&page->served_at);
        if (since == 0) {
            atomic_compare_exchange_strong(&page->served_at, &since, now);
            return EQ_TURN_ACQUIRED;
        }
        if (!eq_is_stale(since, now, stale_ns)) return EQ_TURN_ACQUIRED;
        if (eq_ticket_alive(turn, serving)) return EQ_TURN_STALE;
        eq_pass_over(turn, page, serving, serving + 1);
    }
    return EQ_TURN_ACQUIRED;
}

int eq_turn_map(eq_turn *turn, int descriptor) {
    turn->page = NULL;
    turn->descriptor = descriptor;
    turn->ticket = 0;
    turn->held = 0;
    turn->ops = &eq_turn_system;
    struct stat status;
    if (fstat(descriptor, &status) != 0) return -1;
    if (!S_ISREG(status.st_mode)) {
        errno = EINVAL;
        return -1;
    }
    void *mapped = mmap(NULL, EQ_TURN_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0);
    if (mapped == MAP_FAILED) return -1;
    turn->page = mapped;
    if (eq_page(turn, 1) == NULL) {
        munmap(mapped, EQ_TURN_PAGE_SIZE);
        turn->page = NULL;
        errno = EPROTO;
        return -1;
    }
    return 0;
}

void eq_turn_unmap(eq_turn *turn) {
    if (turn->page == NULL) return;
    eq_turn_release(turn);
    munmap(turn->page, EQ_TURN_PAGE_SIZE);
    turn->page = NULL;
}

int eq_turn_acquire(eq_turn *turn, int64_t timeout_ns, int64_t stale_ns) {
    if (turn->held) return EQ_TURN_ACQUIRED;
    struct eq_turn_page *page = eq_page(turn, 1);
    if (page == NULL) return EQ_TURN_UNUSABLE;
    int64_t start = eq_now_ns(turn);
    int cleared = eq_clear_the_way(turn, page, start, stale_ns);
    if (cleared != EQ_TURN_ACQUIRED) {
        atomic_fetch_add_explicit(&page->bypasses, 1, memory_order_relaxed);
        return cleared;
    }
    uint32_t ticket = atomic_fetch_add(&page->next, 1);
    uint32_t slot = ticket % EQ_TURN_SLOTS;
    if (eq_ticket_lock(turn, ticket, F_WRLCK, F_OFD_SETLK) != 0) {
        // Locks unsupported here, or the byte is someone else's (a group member's): not in line.
        eq_leave(turn, page, ticket);
        return EQ_TURN_UNUSABLE;
    }
    int64_t deadline = start + (timeout_ns > 0 ? timeout_ns : 0);
    // The previous look at the tickets before ours: which was served, and the first with a live owner.
    int looked = 0;
    uint32_t looked_serving = 0;
    uint32_t looked_live = 0;
    // The page was checked above, a system call ago: look again only after a wait. An fstat per look was a third of
    // an uncontended write's checks, about 1 us of a NORMAL enqueue's 50 (issue 34).
    int checked = 1;
    for (;;) {
        page = checked ? page : eq_page(turn, 0);
        checked = 0;
        if (page == NULL) {
            eq_ticket_lock(turn, ticket, F_UNLCK, F_OFD_SETLK);
            return EQ_TURN_UNUSABLE;
        }
        uint32_t woken = atomic_load(&page->wake[slot]);
        uint32_t serving = atomic_load(&page->serving);
        if (serving == ticket) {
            atomic_store(&page->served_at, eq_now_ns(turn));
            turn->ticket = ticket;
            turn->held = 1;
            return EQ_TURN_ACQUIRED;
        }
        if ((int32_t)(ticket - serving) < 0) {
            // Passed over (taken for dead after a long stop, or a value a group member wrote): not in line.
            eq_ticket_lock(turn, ticket, F_UNLCK, F_OFD_SETLK);
            return EQ_TURN_UNUSABLE;
        }
        int64_t now = eq_now_ns(turn);
        if (now >= deadline) {
            eq_leave(turn, page, ticket);
            return EQ_TURN_TIMED_OUT;
        }
        int64_t slice = deadline - now < eq_turn_slice_ns ? deadline - now : eq_turn_slice_ns;
        turn->ops->wait(&page->wake[slot], woken, slice);
        if (atomic_load(&page->serving) != serving) {
            looked = 0;
            continue;
        }
        int64_t after = eq_now_ns(turn);
        int64_t since = atomic_load(&page->served_at);
        if (since == 0) atomic_compare_exchange_strong(&page->served_at, &since, after);
        int stale = eq_is_stale(since, after, stale_ns);
        if (!stale && after - now < slice) continue;  // woken early: look again
        // A slice without progress (or a holder past the stale limit): who before us is alive?
        uint32_t live = eq_first_live(turn, serving, ticket);
        if (live == serving) {
            looked = 0;
            if (stale) {
                atomic_fetch_add_explicit(&page->bypasses, 1, memory_order_relaxed);
                eq_leave(turn, page, ticket);
                return EQ_TURN_STALE;
            }
            continue;
        }
        if (stale || (looked && looked_serving == serving && looked_live == live)) {
            eq_pass_over(turn, page, serving, live);
            looked = 0;
            continue;
        }
        looked = 1;
        looked_serving = serving;
        looked_live = live;
    }
}

void eq_turn_release(eq_turn *turn) {
    if (!turn->held) return;
    turn->held = 0;
    uint32_t ticket = turn->ticket;
    struct eq_turn_page *page = eq_page(turn, 0);
    int waited_on = 0;
    if (page != NULL) {
        atomic_store_explicit(&page->last_turn_at, eq_now_ns(turn), memory_order_relaxed);
        atomic_fetch_add_explicit(&page->handoffs, 1, memory_order_relaxed);
        waited_on = atomic_load(&page->next) != ticket + 1;
        uint32_t expected = ticket;
        // Only if the turn is still ours: a waiter may have passed over us, or a group member moved `serving`.
        if (atomic_compare_exchange_strong(&page->serving, &expected, ticket + 1)) eq_serve(turn, page, ticket + 1);
    }
    eq_ticket_lock(turn, ticket, F_UNLCK, F_OFD_SETLK);
    // The woken writer is usually queued on this CPU (the kernel wakes affine): let it run now rather than
    // after this writer's next record is built (measured: 33 -> 20 us from release to the next holder running).
    if (waited_on) turn->ops->yield();
}

uint32_t eq_turn_waiting(const eq_turn *turn) {
    struct eq_turn_page *page = turn->page;
    if (page == NULL || !eq_file_has_page(turn)) return 0;
    uint32_t queued = atomic_load(&page->next) - atomic_load(&page->serving);
    return queued > 1 && queued <= EQ_TURN_SLOTS ? queued - 1 : 0;
}

// The page's first 64 bytes as plain fields, for reading with pread (no mapping: `eq_turn_peek`).
struct eq_turn_head {
    uint64_t magic;
    uint32_t next;
    uint32_t serving;
    int64_t served_at;
    uint64_t handoffs;
    uint64_t passed_over;
    int64_t last_turn_at;
    uint64_t repairs;
    uint64_t bypasses;
};

_Static_assert(sizeof(struct eq_turn_head) == 64, "the head is the page's first 64 bytes");
_Static_assert(offsetof(struct eq_turn_page, handoffs) == offsetof(struct eq_turn_head, handoffs), "same layout");
_Static_assert(offsetof(struct eq_turn_page, bypasses) == offsetof(struct eq_turn_head, bypasses), "same layout");

int eq_turn_peek(int descriptor, eq_turn_state *state) {
    memset(state, 0, sizeof *state);
    state->idle_ns = INT64_MAX;
    struct eq_turn_head head;
    ssize_t got = pread(descriptor, &head, sizeof head, 0);
    if (got < 0) return -1;
    if (got != (ssize_t)sizeof head || head.magic != eq_turn_magic) return 0;
    state->usable = 1;
    state->handoffs = head.handoffs;
    state->passed_over = head.passed_over;
    state->repairs = head.repairs;
    state->bypasses = head.bypasses;
    const eq_turn probe = {.descriptor = descriptor, .ops = &eq_turn_system};
    int64_t now = eq_now_ns(&probe);
    if (head.last_turn_at != 0 && now >= head.last_turn_at) state->idle_ns = now - head.last_turn_at;
    uint32_t drawn = head.next - head.serving;
    if (drawn == 0 || drawn > EQ_TURN_SLOTS) return 0;
    // Busy only while some owner lives: a dead holder (killed with nobody behind it) is not writing.
    uint32_t live = eq_first_live(&probe, head.serving, head.next);
    if (live == head.next) return 0;
    state->busy = 1;
    for (uint32_t ticket = live + 1; ticket != head.next; ticket++) {
        if (eq_ticket_alive(&probe, ticket)) state->waiting += 1;
    }
    if (live == head.serving && head.served_at != 0 && now >= head.served_at) {
        state->held_ns = now - head.served_at;
    }
    return 0;
}
