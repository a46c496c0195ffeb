import Synchronization

/// A one-way-or-taken flag read from whatever thread: "stop requested", "a launch is pending".
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .acquiring) }

    func set() { value.store(true, ordering: .releasing) }

    /// Clears the flag; returns whether it was set.
    func take() -> Bool { value.exchange(false, ordering: .acquiringAndReleasing) }
}
