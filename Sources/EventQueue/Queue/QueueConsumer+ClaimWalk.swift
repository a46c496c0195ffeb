extension QueueConsumer {
    /// The ids of up to `claims` batches of up to `limit` claimable rows, from one walk of `RecordStateSQL.claimWalk`
    /// in the caller's write transaction (a walk per batch would go past the rows the batches before it just
    /// leased); rows too large to be read are dead-lettered first, and the walk done again.
    ///
    /// The batches are what claiming them one after the other would give: rows in id order, no user in two batches
    /// (so they can be delivered concurrently), and a user whose batch is full keeps its later rows for a later
    /// transaction, so each user's rows are claimed as a prefix, in order.
    func walkClaimable(
        claims: Int, limit: Int, now: Int64, halfOfUsers: Int? = nil
    ) throws(QueueError) -> [[Int64]] {
        let claims = max(0, claims)
        let limit = max(0, limit)
        guard claims > 0, limit > 0 else { return [] }
        var rows: [(id: Int64, user: String?)] = []
        repeat {
            rows = try walk(count: claims * limit, now: now)
        } while try refuseOversized(rows.map(\.id), now: now)
        if let half = halfOfUsers {
            var users: [String?] = []
            var seen: Set<String> = []
            for row in rows.prefix(limit) where row.user.map({ seen.insert($0).inserted }) ?? true {
                users.append(row.user)
            }
            if users.count > 1 {
                let middle = users.count / 2
                let kept = Set((half == 0 ? users[..<middle] : users[middle...]).compactMap { $0 })
                rows = rows.prefix(limit).filter { row in row.user.map(kept.contains) ?? false }
            }
        }
        var batches: [[Int64]] = []
        var batchOfUser: [String: Int] = [:]
        var leftUsers: Set<String> = []
        for row in rows {
            // A row without a stored user (a foreign writer's) is its own user: nothing else can be ordered after it.
            if let user = row.user {
                if leftUsers.contains(user) { continue }
                if let batch = batchOfUser[user] {
                    if batches[batch].count < limit { batches[batch].append(row.id) } else { leftUsers.insert(user) }
                    continue
                }
            }
            if let last = batches.indices.last, batches[last].count < limit {
                batches[last].append(row.id)
                if let user = row.user { batchOfUser[user] = last }
            } else if batches.count < claims {
                batches.append([row.id])
                if let user = row.user { batchOfUser[user] = batches.count - 1 }
            } else if let user = row.user {
                leftUsers.insert(user)
            }
        }
        return batches
    }

    private func walk(count: Int, now: Int64) throws(QueueError) -> [(id: Int64, user: String?)] {
        let statement = try file.connection.statement(
            RecordStateSQL.claimWalk, operation: "claiming records", nil, nil, now, count,
            ClockHorizon.latestPlausible(after: now))
        var rows: [(id: Int64, user: String?)] = []
        rows.reserveCapacity(min(count, 10_000))
        while try statement.step() { rows.append((statement.int64(0), statement.text(1))) }
        statement.reset()
        return rows
    }
}
