#define _GNU_SOURCE
#include "write_turn_model.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "write_turn.h"

enum {
    MAX_WRITERS = 6,
    STACK_SIZE = 128 * 1024,
    HOSTILE = 99,  // the group member's descriptor
    MAX_LOCKS = 128,
    TRACE = 24,
};

static const int64_t ms = 1000000;
// As WriteTurn: the longest wait in line and the stale limit.
static const int64_t timeout_ns = 1000 * 1000000LL;
static const int64_t stale_ns = 1000 * 1000000LL;
// What a call may cost past the deadline: the last look (at most EQ_TURN_SLOTS lock tests of 20 us).
static const int64_t slack_ns = 20 * 1000000LL;
static const int64_t burst_every_ns = 1500 * 1000000LL;

enum state { RUNNABLE, SLEEPING, FUTEX, DONE, DEAD };

struct writer {
    ucontext_t context;
    void *stack;
    enum state state;
    int64_t wake_at;
    void *word;
    int64_t stopped_until;
    int in_acquire;
    int64_t acquire_start;
    int64_t stopped_in_acquire;
    const char *call;
    eq_turn turn;
};

struct model {
    const eq_model_config *config;
    eq_model_result *result;
    uint64_t rng;
    int64_t now;
    int64_t file_size;
    _Alignas(64) unsigned char page[EQ_TURN_PAGE_SIZE];
    struct {
        int64_t offset;
        int owner;
        int64_t until;
    } locks[MAX_LOCKS];
    int lock_count;
    struct writer writers[MAX_WRITERS];
    int count;
    int current;
    ucontext_t scheduler;
    int holder;
    int have_last_ticket;
    uint32_t last_ticket;
    char trace[TRACE][112];
    int trace_next;
};

static _Thread_local struct model *m;

static uint64_t next_random(void) {
    uint64_t z = (m->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int64_t below(int64_t bound) { return bound <= 0 ? 0 : (int64_t)(next_random() % (uint64_t)bound); }

static int chance(int in) { return below(in) == 0; }

__attribute__((format(printf, 1, 2))) static void trace(const char *format, ...) {
    char *line = m->trace[m->trace_next++ % TRACE];
    int used = snprintf(line, sizeof m->trace[0], "%10.3f ms ", (double)m->now / 1e6);
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(line + used, sizeof m->trace[0] - (size_t)used, format, arguments);
    va_end(arguments);
}

__attribute__((format(printf, 1, 2))) static void fail(const char *format, ...) {
    if (m->result->failed) return;
    m->result->failed = 1;
    char *out = m->result->message;
    size_t room = sizeof m->result->message;
    int used = snprintf(out, room, "seed %llu (writers %d, stops %d, kills %d, hostile %d) at %.3f ms: ",
        (unsigned long long)m->config->seed, m->config->writers, m->config->stops, m->config->kills,
        m->config->hostile, (double)m->now / 1e6);
    va_list arguments;
    va_start(arguments, format);
    used += vsnprintf(out + used, room - (size_t)used, format, arguments);
    va_end(arguments);
    used += snprintf(out + used, room - (size_t)used, "\nlast steps:");
    for (int index = 0; index < TRACE && (size_t)used < room; index++) {
        const char *line = m->trace[(m->trace_next + index) % TRACE];
        if (line[0] != 0) used += snprintf(out + used, room - (size_t)used, "\n  %s", line);
    }
}

static struct writer *me(void) { return &m->writers[m->current]; }

// Every kernel call starts here: the writer hands the CPU back and the scheduler decides what happens before the
// call is made (another writer's call, a kill, a stop, an attack).
static void enter_kernel(const char *call) {
    struct writer *self = me();
    self->call = call;
    swapcontext(&self->context, &m->scheduler);
}

static void block(enum state state, const char *call) {
    struct writer *self = me();
    self->state = state;
    self->call = call;
    swapcontext(&self->context, &m->scheduler);
}

static void set_size(int64_t size) {
    if (size < EQ_TURN_PAGE_SIZE && size < m->file_size) {
        int64_t from = size < 0 ? 0 : size;
        memset(m->page + from, 0, (size_t)(EQ_TURN_PAGE_SIZE - from));
    }
    m->file_size = size;
}

static int lock_holder(int64_t offset, int except) {
    for (int index = 0; index < m->lock_count; index++) {
        if (m->locks[index].offset == offset && m->locks[index].owner != except) return m->locks[index].owner;
    }
    return -1;
}

static void drop_lock(int index) { m->locks[index] = m->locks[--m->lock_count]; }

static void drop_locks_of(int owner) {
    for (int index = m->lock_count - 1; index >= 0; index--) {
        if (m->locks[index].owner == owner) drop_lock(index);
    }
}

static int add_lock(int64_t offset, int owner, int64_t until) {
    if (lock_holder(offset, owner) >= 0) return 0;
    for (int index = 0; index < m->lock_count; index++) {
        if (m->locks[index].offset == offset && m->locks[index].owner == owner) return 1;
    }
    if (m->lock_count == MAX_LOCKS) return 0;
    m->locks[m->lock_count].offset = offset;
    m->locks[m->lock_count].owner = owner;
    m->locks[m->lock_count].until = until;
    m->lock_count += 1;
    return 1;
}

// The simulated kernel.

static int64_t model_now_ns(void) {
    enter_kernel("clock_gettime");
    return m->now;
}

static int64_t model_file_size(int descriptor) {
    (void)descriptor;
    enter_kernel("fstat");
    return m->file_size;
}

static int model_truncate(int descriptor, int64_t size) {
    (void)descriptor;
    enter_kernel("ftruncate");
    set_size(size);
    return 0;
}

static int model_lock(int descriptor, int command, struct flock *range) {
    enter_kernel(command == F_OFD_GETLK ? "fcntl(F_OFD_GETLK)"
                 : range->l_type == F_UNLCK ? "fcntl(F_OFD_SETLK, F_UNLCK)"
                                            : "fcntl(F_OFD_SETLK, F_WRLCK)");
    int64_t offset = range->l_start;
    if (command == F_OFD_GETLK) {
        range->l_type = lock_holder(offset, descriptor) >= 0 ? F_WRLCK : F_UNLCK;
        return 0;
    }
    if (range->l_type == F_UNLCK) {
        for (int index = m->lock_count - 1; index >= 0; index--) {
            if (m->locks[index].offset == offset && m->locks[index].owner == descriptor) drop_lock(index);
        }
        return 0;
    }
    if (add_lock(offset, descriptor, INT64_MAX)) return 0;
    errno = EAGAIN;
    return -1;
}

static void model_wait(void *word, uint32_t expected, int64_t timeout) {
    enter_kernel("futex(FUTEX_WAIT)");
    if (atomic_load((_Atomic uint32_t *)word) != expected) return;
    struct writer *self = me();
    self->word = word;
    self->wake_at = m->now + (timeout > 0 ? timeout : 0);
    block(FUTEX, "futex(FUTEX_WAIT) (asleep)");
}

static void wake_word(void *word) {
    for (int index = 0; index < m->count; index++) {
        struct writer *writer = &m->writers[index];
        if (writer->state == FUTEX && writer->word == word) writer->state = RUNNABLE;
    }
}

static void model_wake(void *word) {
    enter_kernel("futex(FUTEX_WAKE)");
    wake_word(word);
}

static void model_yield(void) { enter_kernel("sched_yield"); }

static const eq_turn_ops model_ops = {
    .now_ns = model_now_ns,
    .file_size = model_file_size,
    .truncate = model_truncate,
    .lock = model_lock,
    .wait = model_wait,
    .wake = model_wake,
    .yield = model_yield,
};

// A writer's own work between turns: not a call of the line.
static void writer_sleep(int64_t duration, const char *why) {
    struct writer *self = me();
    self->wake_at = m->now + duration;
    block(SLEEPING, why);
}

static const char *result_name(int result) {
    switch (result) {
    case EQ_TURN_ACQUIRED: return "ACQUIRED";
    case EQ_TURN_TIMED_OUT: return "TIMED_OUT";
    case EQ_TURN_STALE: return "STALE";
    default: return "UNUSABLE";
    }
}

static int calm(void) { return !m->config->stops && !m->config->kills && !m->config->hostile; }

static void writer_main(void) {
    int index = m->current;
    for (int round = 0; round < m->config->rounds; round++) {
        int64_t idle = below(10) < 4 ? below(2 * ms) : below(10) < 5 ? below(40 * ms) : -1;
        if (idle < 0) {
            // Until the next burst instant, with everyone else who chose it: the line has been idle since.
            idle = burst_every_ns - m->now % burst_every_ns + below(5000);
            m->result->bursts += 1;
        }
        writer_sleep(idle, "idle");
        struct writer *self = &m->writers[index];
        self->in_acquire = 1;
        self->acquire_start = m->now;
        self->stopped_in_acquire = 0;
        trace("w%d asks for the turn", index);
        int result = eq_turn_acquire(&self->turn, timeout_ns, stale_ns);
        self->in_acquire = 0;
        int64_t waited = m->now - self->acquire_start - self->stopped_in_acquire;
        trace("w%d: %s (ticket %u) after %.3f ms", index, result_name(result), self->turn.ticket,
            (double)waited / 1e6);
        if (waited > m->result->longest_wait_ns) m->result->longest_wait_ns = waited;
        if (waited > timeout_ns + slack_ns) {
            fail("w%d spent %.3f ms in eq_turn_acquire (timeout 1000 ms)", index, (double)waited / 1e6);
        }
        switch (result) {
        case EQ_TURN_ACQUIRED: m->result->acquired += 1; break;
        case EQ_TURN_TIMED_OUT: m->result->timed_out += 1; break;
        case EQ_TURN_STALE: m->result->stale += 1; break;
        default: m->result->unusable += 1; break;
        }
        if (result == EQ_TURN_ACQUIRED && !m->config->hostile) {
            if (m->holder >= 0) fail("w%d and w%d hold the turn at once", m->holder, index);
            m->holder = index;
        }
        if (calm()) {
            if (result != EQ_TURN_ACQUIRED) {
                fail("in a calm run (nobody stopped, killed or hostile) w%d did not get the turn: %s", index,
                    result_name(result));
            } else if (m->have_last_ticket && (int32_t)(self->turn.ticket - m->last_ticket) <= 0) {
                fail("w%d got ticket %u's turn after ticket %u's", index, self->turn.ticket, m->last_ticket);
            }
            m->have_last_ticket = 1;
            m->last_ticket = self->turn.ticket;
        }
        writer_sleep(20000 + below(3 * ms), "writing");
        if (result == EQ_TURN_ACQUIRED) {
            if (m->holder == index) m->holder = -1;
            trace("w%d gives the turn back", index);
            eq_turn_release(&self->turn);
        }
    }
    m->writers[index].state = DONE;
    swapcontext(&m->writers[index].context, &m->scheduler);
}

// A group member: anything its write access to the file allows, between any two calls of the writers.
static void attack(void) {
    m->result->attacks += 1;
    _Atomic uint32_t *next = (_Atomic uint32_t *)(m->page + 8);
    _Atomic uint32_t *serving = (_Atomic uint32_t *)(m->page + 12);
    int64_t hold = chance(4) ? INT64_MAX : m->now + below(5000 * ms);
    switch (below(9)) {
    case 0: {
        int64_t size = chance(3) ? 0 : below(EQ_TURN_PAGE_SIZE);
        trace("group member truncates the file to %lld bytes", (long long)size);
        set_size(size);
        break;
    }
    case 1: {
        uint32_t first = atomic_load(next);
        trace("group member locks the bytes of tickets %u-%u (not drawn yet)", first, first + 7);
        for (uint32_t ticket = first; ticket != first + 8; ticket++) {
            add_lock(EQ_TURN_PAGE_SIZE + (int64_t)ticket, HOSTILE, hold);
        }
        break;
    }
    case 2: {
        uint32_t ticket = atomic_load(serving) + (uint32_t)below(8) - 2;
        trace("group member locks ticket %u's byte", ticket);
        add_lock(EQ_TURN_PAGE_SIZE + (int64_t)ticket, HOSTILE, hold);
        break;
    }
    case 3: {
        int64_t offset = below(16) * 4;
        uint32_t value = (uint32_t)next_random();
        trace("group member writes %u at page offset %lld", value, (long long)offset);
        memcpy(m->page + offset, &value, sizeof value);
        if (m->file_size < offset + 4) m->file_size = offset + 4;
        break;
    }
    case 4: {
        int64_t offset = 64 + below(2 * EQ_TURN_SLOTS) * 4;
        uint32_t value = chance(2) ? atomic_load(next) + (uint32_t)below(4) : (uint32_t)next_random();
        trace("group member writes %u at page offset %lld (wake/abandoned)", value, (long long)offset);
        memcpy(m->page + offset, &value, sizeof value);
        break;
    }
    case 5:
        trace("group member moves serving far back");
        atomic_store(serving, atomic_load(next) - 1000 - (uint32_t)below(100000));
        break;
    case 6: {
        int64_t when = chance(2) ? 0 : chance(2) ? m->now + below(10000 * ms) : m->now - below(10000 * ms);
        trace("group member sets served_at to %lld", (long long)when);
        memcpy(m->page + 16, &when, sizeof when);
        break;
    }
    case 7:
        trace("group member wakes every futex word");
        for (int index = 0; index < EQ_TURN_SLOTS; index++) wake_word(m->page + 64 + index * 4);
        break;
    default:
        trace("group member lets go of its locks");
        drop_locks_of(HOSTILE);
        break;
    }
}

static void kill_writer(int index) {
    if (index < 0) return;
    struct writer *writer = &m->writers[index];
    trace("w%d is killed in %s", index, writer->call ? writer->call : "-");
    writer->state = DEAD;
    writer->in_acquire = 0;
    drop_locks_of(index);
    if (m->holder == index) m->holder = -1;
    m->result->killed += 1;
}

static void stop_writer(int index) {
    if (index < 0) return;
    struct writer *writer = &m->writers[index];
    int64_t duration = chance(2) ? below(50 * ms) : below(3000 * ms);
    int64_t until = m->now + duration;
    int64_t from = writer->stopped_until > m->now ? writer->stopped_until : m->now;
    if (until <= from) return;
    if (writer->in_acquire) writer->stopped_in_acquire += until - from;
    writer->stopped_until = until;
    trace("w%d is stopped for %.3f ms in %s", index, (double)duration / 1e6, writer->call ? writer->call : "-");
    m->result->stopped += 1;
}

static int live_writer(void) {
    int live[MAX_WRITERS];
    int count = 0;
    for (int index = 0; index < m->count; index++) {
        if (m->writers[index].state != DONE && m->writers[index].state != DEAD) live[count++] = index;
    }
    return count == 0 ? -1 : live[below(count)];
}

static void expire_hostile_holds(void) {
    for (int index = m->lock_count - 1; index >= 0; index--) {
        if (m->locks[index].owner == HOSTILE && m->now >= m->locks[index].until) drop_lock(index);
    }
}

// The next instant anything changes by itself: a timer, the end of a stop, a hostile hold.
static int64_t next_event(void) {
    int64_t next = INT64_MAX;
    for (int index = 0; index < m->count; index++) {
        struct writer *writer = &m->writers[index];
        if (writer->state == DONE || writer->state == DEAD) continue;
        if ((writer->state == SLEEPING || writer->state == FUTEX) && writer->wake_at < next) next = writer->wake_at;
        if (writer->stopped_until > m->now && writer->stopped_until < next) next = writer->stopped_until;
    }
    for (int index = 0; index < m->lock_count; index++) {
        if (m->locks[index].owner == HOSTILE && m->locks[index].until < next) next = m->locks[index].until;
    }
    return next;
}

static void check_waits(void) {
    for (int index = 0; index < m->count; index++) {
        struct writer *writer = &m->writers[index];
        if (!writer->in_acquire || writer->state == DEAD) continue;
        int64_t waited = m->now - writer->acquire_start - writer->stopped_in_acquire;
        if (waited > timeout_ns + slack_ns) {
            fail("w%d has been in eq_turn_acquire for %.3f ms (timeout 1000 ms), in %s", index,
                (double)waited / 1e6, writer->call);
        }
    }
}

void eq_model_run(const eq_model_config *config, eq_model_result *result) {
    memset(result, 0, sizeof *result);
    struct model *model = aligned_alloc(64, (sizeof(struct model) + 63) / 64 * 64);
    if (model == NULL) {
        result->failed = 1;
        snprintf(result->message, sizeof result->message, "out of memory");
        return;
    }
    memset(model, 0, sizeof *model);
    m = model;
    m->config = config;
    m->result = result;
    m->rng = config->seed * 0x2545f4914f6cdd1dULL + 1;
    m->now = 1000 * 1000000000LL;  // CLOCK_MONOTONIC is never 0 (0 is "unknown" in the page)
    m->holder = -1;
    // A fresh `-turn` file: empty, as WriteTurn.open creates it.
    m->file_size = 0;
    int writers = config->writers < 1 ? 1 : config->writers > MAX_WRITERS ? MAX_WRITERS : config->writers;
    m->count = writers;
    for (int index = 0; index < writers; index++) {
        struct writer *writer = &m->writers[index];
        writer->stack = malloc(STACK_SIZE);
        getcontext(&writer->context);
        writer->context.uc_stack.ss_sp = writer->stack;
        writer->context.uc_stack.ss_size = STACK_SIZE;
        writer->context.uc_link = &m->scheduler;
        makecontext(&writer->context, writer_main, 0);
        writer->turn = (eq_turn){.page = m->page, .descriptor = index, .ops = &model_ops};
        writer->state = RUNNABLE;
    }
    while (!result->failed) {
        expire_hostile_holds();
        check_waits();
        if (live_writer() < 0 || result->failed) break;
        if (config->hostile && chance(48)) attack();
        if (config->kills && chance(600)) kill_writer(live_writer());
        if (config->stops && chance(300)) stop_writer(live_writer());
        int runnable[MAX_WRITERS];
        int count = 0;
        for (int index = 0; index < writers; index++) {
            struct writer *writer = &m->writers[index];
            if ((writer->state == SLEEPING || writer->state == FUTEX) && m->now >= writer->wake_at) {
                writer->state = RUNNABLE;
            }
            if (writer->state == RUNNABLE && writer->stopped_until <= m->now) runnable[count++] = index;
        }
        if (count == 0) {
            int64_t next = next_event();
            // Nothing will ever happen again: every live writer is blocked for good.
            m->now = next == INT64_MAX ? m->now + timeout_ns + slack_ns + 1 : next > m->now ? next : m->now + 1;
            if (next == INT64_MAX) check_waits();
            if (next == INT64_MAX) break;
            continue;
        }
        int chosen = runnable[below(count)];
        struct writer *writer = &m->writers[chosen];
        m->current = chosen;
        swapcontext(&m->scheduler, &writer->context);
        m->current = -1;
        if (writer->state != DONE) trace("w%d -> %s", chosen, writer->call);
        m->now += 1000 + below(19000);
        result->steps += 1;
    }
    for (int index = 0; index < writers; index++) free(m->writers[index].stack);
    free(model);
    m = NULL;
}
