// The one SplitMix64 (EventQueueRecords), seen by every test file that imports this module.
@_exported import struct EventQueueRecords.SplitMix64

extension SplitMix64 {
    /// A number in `0..<bound`.
    package mutating func below(_ bound: Int) -> Int {
        Int(next() % UInt64(bound))
    }

    package mutating func pick<T>(_ choices: [T]) -> T {
        choices[below(choices.count)]
    }
}
