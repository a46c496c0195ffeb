// The record model lives in its own target (EventQueueRecords: standard library and Glibc only, so the fuzz
// harness builds it alone), but it is part of the writer API: `Record`, `JSONValue`, `UserIdentity` and
// `ValidationError` are what `QueueWriter.enqueue` takes and throws. Re-exported, so that a writer still links one
// product and writes one `import EventQueue`, as docs/WRITERS.md shows.
@_exported import EventQueueRecords
