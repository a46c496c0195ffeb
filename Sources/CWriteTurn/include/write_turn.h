#ifndef EVENTQUEUE_WRITE_TURN_H
#define EVENTQUEUE_WRITE_TURN_H

#include <stdint.h>

// The writers' line of one queue file: a ticket lock in the first page of the `<queue>-turn` file, which every
// writer maps (docs/PERFORMANCE.md section 5; Sources/EventQueue/Storage/WriteTurn.swift says why).
//
// - Tickets are drawn in arrival order (`next`); the holder is the ticket `serving`. Releasing *hands* the turn
//   on: `serving` moves to the next ticket and only that ticket's waiter is woken (a futex word per slot), so the
//   writer that just committed cannot take it straight back, as it can with SQLite's lock or `flock`.
// - Liveness without process ids (which mean nothing across PID namespaces): each ticket holder keeps an OFD lock
//   on its slot's byte past the page, which the kernel drops when the process dies. A waiter that finds the line
//   stalled on a ticket whose byte is unlocked passes over it.
// - Nothing in the page is trusted: any value a group member writes there can only make writers stop waiting in
//   line (they then wait for SQLite's lock as before), never crash or block past the timeout.

enum {
    /// The mapped page.
    EQ_TURN_PAGE_SIZE = 4096,
    /// Slots (futex words, and lock bytes past the page): more than the writers that can wait at once.
    EQ_TURN_SLOTS = 256,
};

/// Results of eq_turn_acquire.
enum {
    /// The caller holds the turn.
    EQ_TURN_ACQUIRED = 0,
    /// Waited the whole timeout: the caller writes without the turn (SQLite's own lock still serializes).
    EQ_TURN_TIMED_OUT = 2,
    /// The holder has held it longer than the stale limit (stopped, or stuck): the caller writes without waiting.
    EQ_TURN_STALE = 3,
    /// The page is not usable, or the caller's ticket was passed over: the caller writes without the turn.
    EQ_TURN_UNUSABLE = 4,
};

/// A mapped line and this process's ticket. Owned by one thread at a time.
typedef struct eq_turn {
    void *page;
    int descriptor;
    uint32_t ticket;
    int held;
} eq_turn;

/// Makes `descriptor` (a regular file opened read-write) hold an initialized page and maps it into `turn`.
/// Returns 0, or -1 with errno set (the caller then writes without a line).
int eq_turn_map(eq_turn *turn, int descriptor);

/// Unmaps the page (releasing the turn first if held). Does not close the descriptor.
void eq_turn_unmap(eq_turn *turn);

/// Waits in line for at most `timeout_ns`; a holder that has held the turn for more than `stale_ns` is not
/// waited for.
int eq_turn_acquire(eq_turn *turn, int64_t timeout_ns, int64_t stale_ns);

/// Hands the turn to the next in line (or frees it).
void eq_turn_release(eq_turn *turn);

/// How many writers wait behind the holder (0 when the page is unusable).
uint32_t eq_turn_waiting(const eq_turn *turn);

/// Reads the line's counters from `descriptor` (the `-turn` file, opened read-only) without mapping it: a
/// consumer only watches the line, and a mapping of a file a group member can truncate could fault (SIGBUS).
/// Returns 0, or -1 when the file holds no page of this layout.
int eq_turn_peek(int descriptor, uint64_t *handoffs, int64_t *idle_ns);

/// How many times the turn has been handed on, and how many waiters were passed over as dead (both wrap).
uint64_t eq_turn_handoffs(const eq_turn *turn);
uint64_t eq_turn_passed_over(const eq_turn *turn);

#endif
