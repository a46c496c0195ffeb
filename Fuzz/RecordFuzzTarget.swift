// The libFuzzer entry point for the NDJSON record path. Built only by scripts/fuzz, which compiles it with
// Tests/EventQueueRecordsTests/Records/HostileInputOracle.swift (the invariants the unit tests check too) against
// the EventQueueRecords module, the package's target built with fuzzer instrumentation.
#if canImport(Glibc)
    import Glibc
#endif

/// Feeds the input to `HostileInputOracle` as an NDJSON document; a broken invariant aborts, which libFuzzer
/// reports as a crash and saves the input as `crash-<sha1>`.
@_cdecl("LLVMFuzzerTestOneInput")
public func eventQueueFuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    do {
        _ = try HostileInputOracle.check(document: bytes)
    } catch {
        fputs("INVARIANT BROKEN: \(error.description)\n", stderr)
        abort()
    }
    return 0
}
