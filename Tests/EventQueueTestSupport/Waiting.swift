/// Waiting for something another process does (a file appears, the fake Braze counts a request, `/status` says
/// idle) that sends the test no notification of its own: the condition is looked at every `interval` until it
/// holds. The interval only bounds how late the test notices; what it waits for is the condition, never a time.
/// Where a process does notify (its exit, `READY=1` on the notify socket) the waiters use that instead.
public enum Wait {
    /// How often a condition is looked at: short enough to add little to a test, long enough not to load the
    /// two shared cores with `/status` requests.
    public static let interval: Duration = .milliseconds(20)

    /// The first non-`nil` value of `probe`, or `nil` once `timeout` has passed.
    public static func value<T>(
        timeout: Duration = .seconds(30), every interval: Duration = Wait.interval, _ probe: () async throws -> T?
    ) async rethrows -> T? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let value = try await probe() { return value }
            guard ContinuousClock.now < deadline else { return nil }
            try? await Task.sleep(for: interval)
        }
    }
}

/// Waits until `condition` holds; throws, naming `what`, after `timeout`.
public func waitFor(
    _ what: String, timeout: Duration = .seconds(30), every interval: Duration = Wait.interval,
    _ condition: () async throws -> Bool
) async throws {
    let held: Bool? = try await Wait.value(timeout: timeout, every: interval) { try await condition() ? true : nil }
    guard held != nil else { throw ScratchError(message: "timed out after \(timeout) waiting for \(what)") }
}

/// Waits for the first non-`nil` value of `probe`; throws, naming `what`, after `timeout`.
public func waitForValue<T>(
    _ what: String, timeout: Duration = .seconds(30), every interval: Duration = Wait.interval,
    _ probe: () async throws -> T?
) async throws -> T {
    guard let value = try await Wait.value(timeout: timeout, every: interval, probe) else {
        throw ScratchError(message: "timed out after \(timeout) waiting for \(what)")
    }
    return value
}
