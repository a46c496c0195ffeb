#ifndef EVENTQUEUE_WRITE_TURN_MODEL_H
#define EVENTQUEUE_WRITE_TURN_MODEL_H

#include <stdint.h>

// A model test of the writers' line (Sources/CWriteTurn): the line's own code, unchanged, run by simulated writers
// over a simulated kernel (`eq_turn_ops`). Each writer is a coroutine that runs until its next kernel call, so a
// seeded scheduler decides who makes the next call; between any two calls it may also kill a writer (the kernel
// drops its locks), stop one (SIGSTOP) for up to 3 s, or let a group member attack the `-turn` file: truncate it,
// lock ticket bytes for up to 5 s or for good, write garbage anywhere in the page, move `serving` far back, wake
// futex words. Time is simulated (each call costs 1-20 us; a wait moves the clock to its end), so a run of seconds
// takes milliseconds and a seed replays exactly. For tests only: no product links it.

typedef struct eq_model_config {
    uint64_t seed;
    /// Writers (1-6), each asking for the turn `rounds` times, idle between (some of them until the same instant
    /// 1.5 s on: a burst after an idle second).
    int writers;
    int rounds;
    int stops;
    int kills;
    int hostile;
} eq_model_config;

typedef struct eq_model_result {
    /// 1 when a property failed: `message` says which, with the seed and the last calls.
    int failed;
    uint64_t steps;
    uint32_t acquired, timed_out, stale, unusable, killed, stopped, attacks, bursts;
    /// The longest a writer spent in eq_turn_acquire (less the time it was stopped), in simulated ns.
    int64_t longest_wait_ns;
    char message[3072];
} eq_model_result;

/// Runs one seed. Checked: no writer spends longer than the timeout (1 s, as `WriteTurn`) plus 20 ms in
/// eq_turn_acquire, not counting the time it was stopped; without a hostile member no two writers hold the turn
/// at once; and in a calm run (nobody stopped, killed or hostile) every writer gets the turn, in ticket order.
void eq_model_run(const eq_model_config *config, eq_model_result *result);

#endif
