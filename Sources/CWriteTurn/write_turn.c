#define _GNU_SOURCE
#include "write_turn.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// "EQTURN" and the layout's version: a page of another layout is not used.
static const uint64_t eq_turn_magic = 0x45515455524e0002ULL;
// How long a waiter sleeps before looking at the line again (a lost wake-up costs at most this).
static const int64_t eq_turn_slice_ns = 10000000;

// All zero is the empty line: a new file needs only its magic.
struct eq_turn_page {
    _Atomic uint64_t magic;
    _Atomic uint32_t next;        // the next ticket to draw
    _Atomic uint32_t serving;     // the ticket that holds the turn
    _Atomic int64_t held_since;   // CLOCK_MONOTONIC ns when the holder took it; 0 while handed on or free
    _Atomic uint64_t handoffs;
    _Atomic uint64_t passed_over;
    _Atomic int64_t last_turn_at; // CLOCK_MONOTONIC ns when a turn was last given back
    char padding[64 - 48];
    _Atomic uint32_t wake[EQ_TURN_SLOTS];      // bumped when the slot's ticket is served (a futex word)
    _Atomic uint32_t abandoned[EQ_TURN_SLOTS]; // ticket + 1 of a waiter that left the line
};

_Static_assert(sizeof(struct eq_turn_page) <= EQ_TURN_PAGE_SIZE, "the page holds the layout");

static int64_t eq_now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
}

static struct eq_turn_page *eq_page(const eq_turn *turn) {
    struct eq_turn_page *page = turn->page;
    if (page == NULL || atomic_load_explicit(&page->magic, memory_order_acquire) != eq_turn_magic) return NULL;
    return page;
}

// The byte past the page that the holder of a slot's ticket keeps locked while it is in line or holds the turn.
static int eq_slot_lock(int descriptor, uint32_t slot, short type, int command) {
    struct flock range = {
        .l_type = type, .l_whence = SEEK_SET, .l_start = EQ_TURN_PAGE_SIZE + (off_t)slot, .l_len = 1, .l_pid = 0};
    if (fcntl(descriptor, command, &range) != 0) return -1;
    return command == F_OFD_GETLK ? range.l_type != F_UNLCK : 0;
}

static void eq_futex_wait(_Atomic uint32_t *word, uint32_t expected, int64_t timeout_ns) {
    struct timespec relative = {.tv_sec = timeout_ns / 1000000000LL, .tv_nsec = timeout_ns % 1000000000LL};
    syscall(SYS_futex, word, FUTEX_WAIT, expected, &relative, NULL, 0);
}

static void eq_futex_wake(_Atomic uint32_t *word) {
    syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

// `serving` was just set to `ticket` by the caller: pass over tickets whose waiters left, then wake the one served.
static void eq_serve(struct eq_turn_page *page, uint32_t ticket) {
    while (atomic_load(&page->abandoned[ticket % EQ_TURN_SLOTS]) == ticket + 1) {
        uint32_t expected = ticket;
        if (!atomic_compare_exchange_strong(&page->serving, &expected, ticket + 1)) return;
        ticket += 1;
    }
    atomic_fetch_add(&page->wake[ticket % EQ_TURN_SLOTS], 1);
    eq_futex_wake(&page->wake[ticket % EQ_TURN_SLOTS]);
}

// Leaves the line without the turn: marks the ticket so that whoever serves it passes over it, and if it was
// served meanwhile, hands it on.
static void eq_leave(eq_turn *turn, struct eq_turn_page *page, uint32_t ticket) {
    atomic_store(&page->abandoned[ticket % EQ_TURN_SLOTS], ticket + 1);
    eq_slot_lock(turn->descriptor, ticket % EQ_TURN_SLOTS, F_UNLCK, F_OFD_SETLK);
    uint32_t expected = ticket;
    if (atomic_compare_exchange_strong(&page->serving, &expected, ticket + 1)) eq_serve(page, ticket + 1);
}

int eq_turn_map(eq_turn *turn, int descriptor) {
    turn->page = NULL;
    turn->descriptor = descriptor;
    turn->ticket = 0;
    turn->held = 0;
    struct stat status;
    if (fstat(descriptor, &status) != 0) return -1;
    if (!S_ISREG(status.st_mode)) {
        errno = EINVAL;
        return -1;
    }
    if (status.st_size < EQ_TURN_PAGE_SIZE) {
        // The first writer sizes the file (zeros: the empty line); others wait on the flock, then see the size.
        if (flock(descriptor, LOCK_EX) != 0) return -1;
        int sized = fstat(descriptor, &status) == 0
            && (status.st_size >= EQ_TURN_PAGE_SIZE || ftruncate(descriptor, EQ_TURN_PAGE_SIZE) == 0);
        int saved = errno;
        flock(descriptor, LOCK_UN);
        if (!sized) {
            errno = saved;
            return -1;
        }
    }
    void *mapped = mmap(NULL, EQ_TURN_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0);
    if (mapped == MAP_FAILED) return -1;
    struct eq_turn_page *page = mapped;
    uint64_t magic = atomic_load_explicit(&page->magic, memory_order_acquire);
    if (magic == 0) {
        uint64_t empty = 0;
        atomic_compare_exchange_strong(&page->magic, &empty, eq_turn_magic);
        magic = atomic_load(&page->magic);
    }
    if (magic != eq_turn_magic) {
        munmap(mapped, EQ_TURN_PAGE_SIZE);
        errno = EPROTO;
        return -1;
    }
    turn->page = mapped;
    return 0;
}

void eq_turn_unmap(eq_turn *turn) {
    if (turn->page == NULL) return;
    eq_turn_release(turn);
    munmap(turn->page, EQ_TURN_PAGE_SIZE);
    turn->page = NULL;
}

int eq_turn_acquire(eq_turn *turn, int64_t timeout_ns, int64_t stale_ns) {
    struct eq_turn_page *page = eq_page(turn);
    if (page == NULL) return EQ_TURN_UNUSABLE;
    if (turn->held) return EQ_TURN_ACQUIRED;
    int64_t start = eq_now_ns();
    int64_t since = atomic_load(&page->held_since);
    if (since != 0 && start - since > stale_ns) return EQ_TURN_STALE;
    uint32_t ticket = atomic_fetch_add(&page->next, 1);
    uint32_t slot = ticket % EQ_TURN_SLOTS;
    if (eq_slot_lock(turn->descriptor, slot, F_WRLCK, F_OFD_SETLK) != 0) {
        // More waiters than slots, or locks unsupported here: not in line (the unlock in `eq_leave` is a no-op).
        eq_leave(turn, page, ticket);
        return EQ_TURN_UNUSABLE;
    }
    int64_t deadline = start + (timeout_ns > 0 ? timeout_ns : 0);
    uint32_t stalled_on = 0;
    int stalled_checks = 0;
    for (;;) {
        uint32_t woken = atomic_load(&page->wake[slot]);
        uint32_t serving = atomic_load(&page->serving);
        if (serving == ticket) {
            atomic_store(&page->held_since, eq_now_ns());
            turn->ticket = ticket;
            turn->held = 1;
            return EQ_TURN_ACQUIRED;
        }
        if ((int32_t)(serving - ticket) > 0) {
            // Passed over (taken for dead after a long stop, or a value a group member wrote): not in line.
            eq_slot_lock(turn->descriptor, slot, F_UNLCK, F_OFD_SETLK);
            return EQ_TURN_UNUSABLE;
        }
        int64_t now = eq_now_ns();
        if (now >= deadline) {
            eq_leave(turn, page, ticket);
            return EQ_TURN_TIMED_OUT;
        }
        int64_t slice = deadline - now < eq_turn_slice_ns ? deadline - now : eq_turn_slice_ns;
        eq_futex_wait(&page->wake[slot], woken, slice);
        if (atomic_load(&page->serving) != serving) {
            stalled_checks = 0;
            continue;
        }
        since = atomic_load(&page->held_since);
        if (since != 0 && eq_now_ns() - since > stale_ns) {
            eq_leave(turn, page, ticket);
            return EQ_TURN_STALE;
        }
        if (eq_now_ns() - now < slice) continue;  // woken early: look again
        // A slice without progress: is the served ticket's waiter alive? Its byte is locked from before it
        // waited until it hands the turn on; unlocked at two looks a slice apart means it died.
        if (eq_slot_lock(turn->descriptor, serving % EQ_TURN_SLOTS, F_WRLCK, F_OFD_GETLK) == 0) {
            if (stalled_on == serving && ++stalled_checks >= 2) {
                uint32_t expected = serving;
                if (atomic_compare_exchange_strong(&page->serving, &expected, serving + 1)) {
                    atomic_fetch_add(&page->passed_over, 1);
                    atomic_store(&page->held_since, 0);
                    eq_serve(page, serving + 1);
                }
                stalled_checks = 0;
            } else if (stalled_on != serving) {
                stalled_on = serving;
                stalled_checks = 1;
            }
        } else {
            stalled_checks = 0;
        }
    }
}

void eq_turn_release(eq_turn *turn) {
    struct eq_turn_page *page = eq_page(turn);
    if (!turn->held) return;
    turn->held = 0;
    if (page == NULL) return;
    uint32_t ticket = turn->ticket;
    atomic_store(&page->held_since, 0);
    atomic_store_explicit(&page->last_turn_at, eq_now_ns(), memory_order_relaxed);
    atomic_fetch_add_explicit(&page->handoffs, 1, memory_order_relaxed);
    uint32_t expected = ticket;
    int waited_on = atomic_load(&page->next) != ticket + 1;
    // Only if the turn is still ours: a group member may have moved `serving`.
    if (atomic_compare_exchange_strong(&page->serving, &expected, ticket + 1)) eq_serve(page, ticket + 1);
    eq_slot_lock(turn->descriptor, ticket % EQ_TURN_SLOTS, F_UNLCK, F_OFD_SETLK);
    // The woken writer is usually queued on this CPU (the kernel wakes affine): let it run now rather than
    // after this writer's next record is built (measured: 33 -> 20 us from release to the next holder running).
    if (waited_on) sched_yield();
}

uint64_t eq_turn_handoffs(const eq_turn *turn) {
    struct eq_turn_page *page = eq_page(turn);
    return page == NULL ? 0 : atomic_load_explicit(&page->handoffs, memory_order_relaxed);
}

uint32_t eq_turn_waiting(const eq_turn *turn) {
    struct eq_turn_page *page = eq_page(turn);
    if (page == NULL) return 0;
    uint32_t queued = atomic_load(&page->next) - atomic_load(&page->serving);
    return queued > 1 && queued < EQ_TURN_SLOTS ? queued - 1 : 0;
}

// The page's first 64 bytes as plain fields, for reading with pread (no mapping: `eq_turn_peek`).
struct eq_turn_head {
    uint64_t magic;
    uint32_t next;
    uint32_t serving;
    int64_t held_since;
    uint64_t handoffs;
    uint64_t passed_over;
    int64_t last_turn_at;
    char padding[16];
};

_Static_assert(sizeof(struct eq_turn_head) == 64, "the head is the page's first 64 bytes");
_Static_assert(offsetof(struct eq_turn_page, handoffs) == offsetof(struct eq_turn_head, handoffs), "same layout");
_Static_assert(offsetof(struct eq_turn_page, last_turn_at) == offsetof(struct eq_turn_head, last_turn_at), "same");
_Static_assert(offsetof(struct eq_turn_page, wake) == 64, "the slots start after the head");

int eq_turn_peek(int descriptor, uint64_t *handoffs, int64_t *idle_ns) {
    struct eq_turn_head head;
    if (pread(descriptor, &head, sizeof head, 0) != (ssize_t)sizeof head || head.magic != eq_turn_magic) return -1;
    *handoffs = head.handoffs;
    if (head.held_since != 0) {
        *idle_ns = 0;
    } else {
        int64_t idle = eq_now_ns() - head.last_turn_at;
        *idle_ns = head.last_turn_at == 0 || idle < 0 ? INT64_MAX : idle;
    }
    return 0;
}

uint64_t eq_turn_passed_over(const eq_turn *turn) {
    struct eq_turn_page *page = eq_page(turn);
    return page == NULL ? 0 : atomic_load_explicit(&page->passed_over, memory_order_relaxed);
}
