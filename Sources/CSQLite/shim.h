#ifndef EVENTQUEUE_CSQLITE_SHIM_H
#define EVENTQUEUE_CSQLITE_SHIM_H

#include <sqlite3.h>

// SQLITE_TRANSIENT is a function-pointer cast macro that Swift cannot import.
static inline sqlite3_destructor_type eventqueue_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

#endif
