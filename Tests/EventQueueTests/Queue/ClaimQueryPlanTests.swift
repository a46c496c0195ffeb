import CSQLite
import Testing

@testable import EventQueue

/// Claiming must cost the same whatever the backlog: proved by the plan SQLite chooses for the claim's walk
/// (`RecordStateSQL.claimWalk`) and by counting the virtual-machine steps of one walk of 100 (deterministic,
/// unlike a timing) at two backlog sizes.
@Suite struct ClaimQueryPlanTests {
    @Test func claimUsesTheLiveAndUserOrderIndexesWithoutSorting() throws {
        let directory = Scratch()
        let path = directory.file("q.db")
        try QueueWriter(path: path).close()
        let raw = try RawDatabase(path: path)
        let plan = try raw.rows("EXPLAIN QUERY PLAN " + RecordStateSQL.claimWalk).compactMap { $0.last ?? nil }
        let text = plan.joined(separator: "\n")
        #expect(text.contains("records_live"), "plan:\n\(text)")
        #expect(text.contains("records_user_order"), "plan:\n\(text)")
        #expect(!text.contains("TEMP B-TREE"), "claim must not sort:\n\(text)")
        for line in plan where line.hasPrefix("SCAN") {
            #expect(line.contains("USING") || line.contains("json_each"), "full scan in plan: \(line)")
        }
    }

    @Test func claimCostIsFlatFromOneThousandToFiftyThousandPending() throws {
        let small = try claimSteps(backlog: 1_000)
        let large = try claimSteps(backlog: 50_000)
        #expect(large <= small * 2, "VM steps for one claim of 100: \(small) at 1k, \(large) at 50k")
    }

    @Test func deadLettersDoNotSlowClaims() throws {
        let clean = try claimSteps(backlog: 1_000)
        let withDead = try claimSteps(backlog: 1_000, deadInFront: 20_000)
        #expect(withDead <= clean * 2, "VM steps: \(clean) without dead letters, \(withDead) behind 20k dead")
    }

    /// Builds a queue with `deadInFront` dead records followed by `backlog` pending ones, then counts the VM steps
    /// of one claim of 100.
    private func claimSteps(backlog: Int, deadInFront: Int = 0) throws -> Int32 {
        let directory = Scratch()
        let path = directory.file("q.db")
        try QueueWriter(path: path).close()
        let raw = try RawDatabase(path: path)
        try raw.execute("BEGIN")
        if deadInFront > 0 {
            try raw.execute(
                """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(deadInFront))
                INSERT INTO records (kind, payload, state, dead_at_ms, last_error)
                SELECT 'event', json_object('external_id', 'd' || i, 'name', 'e'), 'dead', 1, 'x' FROM n
                """)
        }
        try raw.execute(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(backlog))
            INSERT INTO records (kind, payload)
            SELECT 'event', json_object('external_id', 'u' || (i % 97), 'name', 'e') FROM n
            """)
        try raw.execute("COMMIT")
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(raw.handle, RecordStateSQL.claimWalk, -1, &statement, nil) == SQLITE_OK, let statement
        else {
            throw RawDatabase.RawError(message: String(cString: sqlite3_errmsg(raw.handle)))
        }
        defer { sqlite3_finalize(statement) }
        sqlite3_bind_int64(statement, 3, WallClock.nowMilliseconds())
        sqlite3_bind_int64(statement, 4, 100)
        sqlite3_bind_int64(statement, 5, ClockHorizon.latestPlausible(after: WallClock.nowMilliseconds()))
        var rows = 0
        while sqlite3_step(statement) == SQLITE_ROW { rows += 1 }
        #expect(rows == 100)
        return sqlite3_stmt_status(statement, SQLITE_STMTSTATUS_VM_STEP, 0)
    }
}
