import EventQueue

/// One entry of an old store and the record it stands for.
struct LegacyEntry {
    enum Plan {
        /// A record to enqueue (checked at enqueue; a rule broken makes it a dead letter with the rule).
        case record(Record)
        /// A record that is known to be wrong before it is checked (binary data, an unknown profile field).
        case deadLetter(Record, reason: String)
        /// Not understood at all: left in the store, never cleared.
        case unrecognized(String)
    }

    let section: String
    let index: Int
    let plan: Plan

    /// `pending_custom_events[2]`: how the summary and dead-letter reasons name the entry.
    var label: String { "\(section)[\(index)]" }
}
