// Every test file of this target sees the shared test helpers (SplitMix64, Scratch) without its own import.
@_exported import EventQueueTestSupport
