#ifndef EVENTQUEUE_WRITE_TURN_H
#define EVENTQUEUE_WRITE_TURN_H

#include <stdint.h>

// The writers' line of one queue file: a ticket lock in the first page of the `<queue>-turn` file, which every
// writer of this release maps. The invariants, who may write each field and what a reader must assume of it are
// stated at the top of write_turn.c; why a line at all: Sources/EventQueue/Storage/WriteTurn.swift.
//
// - Tickets are drawn in arrival order; releasing *hands* the turn to the next ticket and wakes only its waiter.
// - Liveness without process ids: each ticket's owner keeps an OFD lock on a byte of its own (past the page), which
//   the kernel drops when the process dies; a ticket whose byte is unlocked is passed over.
// - Any value in the page may have been written by a group member: the line repairs what it can recognise as
//   impossible, and otherwise a writer writes without it (SQLite's lock still serialises). A waiter never waits
//   longer than its timeout. A mapping of a file that another process truncates faults (SIGBUS) when touched, as
//   SQLite's own `-shm` does: every use checks the file's size first, which narrows that window to the instant
//   between the check and the access (docs/RELIABILITY.md, "Hardening V").

enum {
    /// The mapped page.
    EQ_TURN_PAGE_SIZE = 4096,
    /// Futex words (a ticket waits on the one of its slot, `ticket % EQ_TURN_SLOTS`) and the longest stretch of
    /// tickets a waiter examines for dead owners.
    EQ_TURN_SLOTS = 256,
};

/// Results of eq_turn_acquire.
enum {
    /// The caller holds the turn.
    EQ_TURN_ACQUIRED = 0,
    /// Waited the whole timeout: the caller writes without the turn (SQLite's own lock still serializes).
    EQ_TURN_TIMED_OUT = 2,
    /// The turn belongs to a live process that has had it longer than the stale limit (stopped, or stuck): the
    /// caller writes without waiting.
    EQ_TURN_STALE = 3,
    /// The page is not usable, or the caller's ticket was passed over: the caller writes without the turn.
    EQ_TURN_UNUSABLE = 4,
};

struct flock;

/// Every call the line makes into the kernel while waiting and handing on, so that the model test
/// (Tests/CWriteTurnModel) runs this code over a simulated kernel that can stop, kill or attack any writer at any of
/// them. `eq_turn_map` installs `eq_turn_system`, the real calls.
typedef struct eq_turn_ops {
    /// CLOCK_MONOTONIC, ns.
    int64_t (*now_ns)(void);
    /// fstat's st_size, or -1.
    int64_t (*file_size)(int descriptor);
    int (*truncate)(int descriptor, int64_t size);
    /// fcntl with F_OFD_SETLK or F_OFD_GETLK.
    int (*lock)(int descriptor, int command, struct flock *range);
    /// FUTEX_WAIT on a word of the page, for at most `timeout_ns`.
    void (*wait)(void *word, uint32_t expected, int64_t timeout_ns);
    /// FUTEX_WAKE of every waiter on the word.
    void (*wake)(void *word);
    /// sched_yield.
    void (*yield)(void);
} eq_turn_ops;

extern const eq_turn_ops eq_turn_system;

/// A mapped line and this process's ticket. Owned by one thread at a time.
typedef struct eq_turn {
    void *page;
    int descriptor;
    uint32_t ticket;
    int held;
    const eq_turn_ops *ops;
} eq_turn;

/// What a reader sees of a line (`eq_turn_peek`).
typedef struct eq_turn_state {
    /// 1 when the file holds a page of this layout; 0 otherwise (the fields below are then 0).
    int usable;
    /// 1 when a live process holds the turn or waits for it.
    int busy;
    /// Writers waiting behind the holder.
    uint32_t waiting;
    /// How long the ticket being served has had the turn (0 when nobody has it).
    int64_t held_ns;
    /// How long since a turn was last given back (INT64_MAX when never).
    int64_t idle_ns;
    uint64_t handoffs;
    uint64_t passed_over;
    uint64_t repairs;
    uint64_t bypasses;
} eq_turn_state;

/// Makes `descriptor` (a regular file opened read-write) hold an initialized page and maps it into `turn`.
/// Returns 0, or -1 with errno set (the caller then writes without a line).
int eq_turn_map(eq_turn *turn, int descriptor);

/// Unmaps the page (releasing the turn first if held). Does not close the descriptor.
void eq_turn_unmap(eq_turn *turn);

/// Waits in line for at most `timeout_ns`; a live holder that has had the turn for more than `stale_ns` is not
/// waited for.
int eq_turn_acquire(eq_turn *turn, int64_t timeout_ns, int64_t stale_ns);

/// Hands the turn to the next in line (or frees it).
void eq_turn_release(eq_turn *turn);

/// How many writers wait behind the holder (0 when the page is unusable).
uint32_t eq_turn_waiting(const eq_turn *turn);

/// Reads the line from `descriptor` (the `-turn` file, opened read-only) without mapping it: a consumer only
/// watches the line, and a mapping of a file a group member can truncate could fault. Returns 0
/// (`state->usable` says whether the file holds a line of this layout), or -1 when it cannot be read.
int eq_turn_peek(int descriptor, eq_turn_state *state);

#endif
