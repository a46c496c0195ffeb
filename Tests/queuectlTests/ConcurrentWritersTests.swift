import EventQueue
import Foundation
import Testing
import EventQueueTestSupport

/// The problem EventQueue exists for: many writers appending at once while a consumer drains. Every writer is a
/// separate process (extension-like one-record invocations of `queuectl` and of the minimal library writer, NDJSON
/// bulk loads, a foreign Python writer following docs/SCHEMA.md), and another process drains repeatedly. With no
/// crash, every record must be delivered exactly once, in id order per user.
@Suite struct ConcurrentWritersTests {
    /// EVENTQUEUE_LONG_TESTS=1 multiplies the record counts by 10.
    static let scale = TestProfile.isLong ? 10 : 1

    @Test func everyRecordFromEightWritersIsDeliveredOnceInPerUserOrder() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        let out = scratch.file("delivered.jsonl")
        let stop = scratch.file("stop")
        let perRecord = 30 * Self.scale
        let bulkFiles = 4 * Self.scale
        let bulkSize = 50
        let foreign = 100 * Self.scale
        let users = 3

        // The queue exists before foreign writers connect (docs/SCHEMA.md).
        try QueueWriter(path: db).close()  // status and check never create a queue

        var expected: Set<String> = []
        var writers: [String] = []
        let q = Products.queuectl
        // Four extension-like writers: one process per record.
        for writer in ["x1", "x2"] {
            writers.append(
                """
                for i in $(seq 1 \(perRecord)); do
                  "\(q)" enqueue event tap --prop writer=\(writer) --prop seq=$i --external-id user-$((i % \(users))) \
                    --db "\(db)" >/dev/null || exit 1
                done
                """)
            for seq in 1...perRecord { expected.insert("\(writer):\(seq)") }
        }
        writers.append(
            """
            for i in $(seq 1 \(perRecord)); do
              "\(q)" enqueue purchase sku-$i --currency EUR --price 1.5 --prop writer=x3 --prop seq=$i \
                --external-id user-$((i % \(users))) --db "\(db)" >/dev/null || exit 1
            done
            """)
        for seq in 1...perRecord { expected.insert("x3:\(seq)") }
        writers.append(
            """
            for i in $(seq 1 \(perRecord)); do
              "\(q)" enqueue attribute marker x4:$i --external-id user-$((i % \(users))) --db "\(db)" >/dev/null \
                || exit 1
            done
            """)
        for seq in 1...perRecord { expected.insert("x4:\(seq)") }
        // The minimal library writer, one process per record (the marker is in the event name).
        writers.append(
            """
            for i in $(seq 1 \(perRecord)); do
              "\(Products.minimalWriter)" "\(db)" "mw:$i" user-$((i % \(users))) >/dev/null || exit 1
            done
            """)
        for seq in 1...perRecord { expected.insert("mw:\(seq)") }
        // Two bulk writers: NDJSON files, each one transaction.
        for writer in ["b1", "b2"] {
            var files: [String] = []
            var seq = 0
            for file in 0..<bulkFiles {
                var lines: [String] = []
                for _ in 0..<bulkSize {
                    seq += 1
                    let kind = seq % 5 == 0 ? "attribute" : "event"
                    let body =
                        kind == "event"
                        ? #""name":"bulk","properties":{"writer":"\#(writer)","seq":\#(seq)}"#
                        : #""bulk_marker":"\#(writer):\#(seq)""#
                    lines.append(#"{"type":"\#(kind)","external_id":"user-\#(seq % users)",\#(body)}"#)
                    expected.insert("\(writer):\(seq)")
                }
                let path = scratch.file("\(writer)-\(file).ndjson")
                try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
                files.append(path)
            }
            writers.append(
                files.map { #""\#(q)" enqueue --ndjson "\#($0)" --db "\#(db)" >/dev/null || exit 1"# }.joined(
                    separator: "\n"))
        }
        // A foreign writer: Python's sqlite3 with the documented INSERT, one record per transaction.
        let python = scratch.file("foreign.py")
        try """
        import json, sqlite3, sys
        db = sqlite3.connect(sys.argv[1], timeout=10.0, isolation_level=None)
        db.execute("PRAGMA synchronous = FULL")
        for i in range(1, \(foreign) + 1):
            payload = {"external_id": "user-%d" % (i % \(users)), "name": "foreign",
                       "properties": {"writer": "py", "seq": i}}
            db.execute(
                "INSERT INTO records (kind, payload, idempotency_key) VALUES (?, ?, ?) "
                "ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING",
                ("event", json.dumps(payload), "py-%d" % i))
        """.write(toFile: python, atomically: true, encoding: .utf8)
        writers.append(#"python3 "\#(python)" "\#(db)""#)
        for seq in 1...foreign { expected.insert("py:\(seq)") }
        #expect(writers.count >= 8)

        let drainer = """
            while [ ! -e "\(stop)" ]; do
              "\(q)" drain --local --sink "jsonl:\(out)" --batch-size 25 --db "\(db)" >/dev/null
              rc=$?; if [ $rc -ne 0 ] && [ $rc -ne 11 ]; then exit $rc; fi
            done
            """
        let drain = Task { try await run("/bin/bash", ["-c", drainer], in: scratch) }
        let results = try await withThrowingTaskGroup(of: ProcessResult.self) { group in
            for script in writers {
                group.addTask { try await run("/bin/bash", ["-c", script], in: scratch) }
            }
            var results: [ProcessResult] = []
            for try await result in group { results.append(result) }
            return results
        }
        for result in results {
            #expect(result.status == 0, "writer failed: \(result.stderr)")
        }
        _ = FileManager.default.createFile(atPath: stop, contents: nil)
        let drained = try await drain.value
        #expect(drained.status == 0, "drainer failed: \(drained.stderr)")
        let deliveredWhileWriting = try DeliveredLine.parse(file: out).count
        #expect(deliveredWhileWriting > 0, "the draining process should deliver while writers are still writing")
        let final = try await queuectl(["drain", "--local", "--sink", "jsonl:\(out)"], db: db, in: scratch)
        #expect(final.status == 0, "final drain: \(final.stderr)")

        let lines = try DeliveredLine.parse(file: out)
        var seen: [String: Int] = [:]
        var lastIDPerUser: [String: Int64] = [:]
        var lastSeqPerWriterAndUser: [String: Int] = [:]
        for line in lines {
            let marker = Self.marker(line)
            seen[marker, default: 0] += 1
            let user = line.object["external_id"] as? String ?? "?"
            if let previous = lastIDPerUser[user] {
                #expect(line.id > previous, "user \(user): record \(line.id) delivered after \(previous)")
            }
            lastIDPerUser[user] = line.id
            let parts = marker.split(separator: ":")
            if parts.count == 2, let seq = Int(parts[1]) {
                let key = "\(parts[0])/\(user)"
                if let previous = lastSeqPerWriterAndUser[key] {
                    #expect(seq > previous, "\(key): seq \(seq) delivered after \(previous)")
                }
                lastSeqPerWriterAndUser[key] = seq
            }
        }
        let lost = expected.subtracting(seen.keys)
        let duplicated = seen.filter { $0.value > 1 }.map(\.key)
        let unexpected = Set(seen.keys).subtracting(expected)
        #expect(lost.isEmpty, "lost \(lost.count): \(lost.sorted().prefix(10))")
        #expect(duplicated.isEmpty, "duplicated: \(duplicated.sorted().prefix(10))")
        #expect(unexpected.isEmpty, "unexpected: \(unexpected.sorted().prefix(10))")
        #expect(lines.count == expected.count)
        #expect(Set(lines.map(\.id)).count == lines.count, "a record id was delivered twice")

        let status = try await queuectl(["status", "--json"], db: db, in: scratch)
        let counts = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        #expect(counts?["pending"] as? Int == 0)
        #expect(counts?["leased"] as? Int == 0)
        #expect(counts?["dead"] as? Int == 0)
    }

    /// The writer and sequence number a delivered record carries, wherever its writer put them.
    static func marker(_ line: DeliveredLine) -> String {
        if let properties = line.object["properties"] as? [String: Any], let writer = properties["writer"] as? String,
            let seq = properties["seq"]
        {
            return "\(writer):\(seq)"
        }
        if let name = line.object["name"] as? String, name.hasPrefix("mw:") { return name }
        if let marker = (line.object["bulk_marker"] ?? line.object["marker"]) as? String { return marker }
        return "unknown:\(line.id)"
    }

    /// Eight processes open a brand-new file at once: one migrates, every one succeeds.
    @Test func processesOpeningANewFileAtOnceMigrateItOnce() async throws {
        let scratch = Scratch()
        let db = scratch.file("new.db")
        let results = try await withThrowingTaskGroup(of: ProcessResult.self) { group in
            for index in 0..<8 {
                group.addTask {
                    try await queuectl(
                        ["enqueue", "event", "first-open", "--external-id", "u\(index)"], db: db, in: scratch)
                }
            }
            var results: [ProcessResult] = []
            for try await result in group { results.append(result) }
            return results
        }
        for result in results { #expect(result.status == 0, "\(result.stderr)") }
        #expect(Set(results.map(\.stdout)).count == 8, "each process got its own record id")
        let check = try await queuectl(["check", "--json"], db: db, in: scratch)
        #expect(check.status == 0, "\(check.stdout)")
        let status = try await queuectl(["status", "--json"], db: db, in: scratch)
        let counts = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        #expect(counts?["pending"] as? Int == 8)
        #expect(counts?["schema_version"] as? Int == Migrations.latestVersion)
    }
}
