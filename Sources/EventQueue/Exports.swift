// The record model lives in its own target (so the fuzz harness builds it alone) but is part of the writer API:
// re-exported, so that a writer links one product and writes one `import EventQueue`.
@_exported import EventQueueRecords
