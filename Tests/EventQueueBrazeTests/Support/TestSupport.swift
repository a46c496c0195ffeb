/// The shared test support (`Scratch`, `Locked`, `SplitMix64`, ...), visible in every file of this target.
@_exported import EventQueueTestSupport
