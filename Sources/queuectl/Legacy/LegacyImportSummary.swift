import EventQueue
import EventQueueDelivery

/// What `import-legacy` did, entry by entry, and its text and `--json` forms.
struct LegacyImportSummary {
    struct Outcome {
        var entry: LegacyEntry
        /// `nil` for an unrecognized entry (left in the store).
        var result: BatchOutcome?

        /// True when the entry is in the queue once the import committed: only these may be cleared.
        var committed: Bool { result != nil }
    }

    let store: LegacyStore
    let dryRun: Bool
    var outcomes: [Outcome] = []
    /// Entries removed from the store by `--clear-source`; `nil` when not asked or not done.
    var cleared: Int?
    var clearRefused = false

    var imported: Int { outcomes.count(where: { if case .enqueued = $0.result { true } else { false } }) }
    var deadLettered: Int { outcomes.count(where: { if case .deadLettered = $0.result { true } else { false } }) }
    var alreadyQueued: Int { outcomes.count(where: { if case .alreadyKnown = $0.result { true } else { false } }) }
    var unrecognized: [Outcome] { outcomes.filter { $0.result == nil } }
    var skippedKeys: [String] {
        store.keys.filter { !LegacyStore.sections.contains($0) && $0 != LegacyStore.generationKey }
    }

    var text: String {
        let verb = dryRun ? "would import" : "imported"
        var text =
            "\(verb) \(imported) entries from \(store.path) (\(store.format.rawValue)), dead-lettered \(deadLettered), "
            + "already in the queue \(alreadyQueued), skipped \(skippedKeys.count) app settings keys, "
            + "unrecognized \(unrecognized.count)\n"
        for outcome in outcomes {
            if case .deadLettered(let id, let reason) = outcome.result {
                text += dryRun ? "  dead letter: " : "  dead letter \(id): "
                text += EventQueueRecords.ValidationError.printable(reason) + "\n"
            }
        }
        if !skippedKeys.isEmpty {
            text +=
                "  skipped: "
                + skippedKeys.map { EventQueueRecords.ValidationError.printable($0) }.joined(separator: ", ") + "\n"
        }
        for outcome in unrecognized {
            if case .unrecognized(let why) = outcome.entry.plan {
                text += "  unrecognized, left in the store: \(outcome.entry.label): \(why)\n"
            }
        }
        if let cleared { text += "cleared \(cleared) entries from \(store.path)\n" }
        return text
    }

    var json: JSONValue {
        var entries: [JSONValue] = []
        for outcome in outcomes {
            var object: JSONObject = ["entry": .string(outcome.entry.label)]
            switch outcome.result {
            case .enqueued(let id):
                object["outcome"] = "imported"
                object["id"] = dryRun ? .null : ReportJSON.number(id)
            case .deadLettered(let id, let reason):
                object["outcome"] = "dead_lettered"
                object["id"] = dryRun ? .null : ReportJSON.number(id)
                object["reason"] = .string(reason)
            case .alreadyKnown(let id):
                object["outcome"] = "already_queued"
                object["id"] = ReportJSON.number(id)
            case nil:
                object["outcome"] = "unrecognized"
                if case .unrecognized(let why) = outcome.entry.plan { object["reason"] = .string(why) }
            }
            entries.append(.object(object))
        }
        return .object([
            "store": .string(store.path),
            "format": .string(store.format.rawValue),
            "dry_run": .bool(dryRun),
            "imported": ReportJSON.number(imported),
            "dead_lettered": ReportJSON.number(deadLettered),
            "already_queued": ReportJSON.number(alreadyQueued),
            "skipped": ReportJSON.number(skippedKeys.count),
            "skipped_keys": .array(skippedKeys.map(JSONValue.string)),
            "unrecognized": ReportJSON.number(unrecognized.count),
            "cleared": cleared.map(ReportJSON.number) ?? .null,
            "entries": .array(entries),
        ])
    }
}
