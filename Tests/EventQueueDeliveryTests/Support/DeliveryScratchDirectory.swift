import EventQueueTestSupport

/// The shared per-test directory (EventQueueTestSupport), under the name these tests use.
typealias DeliveryScratchDirectory = Scratch
