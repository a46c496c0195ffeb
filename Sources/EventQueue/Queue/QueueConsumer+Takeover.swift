extension QueueConsumer {
    /// Hands back at once every record leased by a process that no longer runs on this host, instead of leaving it
    /// (and its user's later records) until the lease expires; other hosts' leases are never touched. Returns how
    /// many. Call it holding the drain lock, so two drainers starting together do not both release and claim.
    @discardableResult
    public func releaseLeasesOfDeadProcesses() throws(QueueError) -> Int {
        let connection = file.connection
        let owners = try connection.statement(RecordStateSQL.leaseOwners, operation: "reading lease owners")
        var dead: [String] = []
        while try owners.step() {
            guard let token = owners.text(0) else { continue }
            // A lease token is `consumerID#sequence`.
            let owner = String(token.prefix { $0 != "#" })
            if Self.isDeadProcessOnThisHost(owner) { dead.append(token) }
        }
        owners.reset()
        guard !dead.isEmpty else { return 0 }
        return try connection.write("releasing the leases of a dead process") {
            () throws(QueueError) in
            try connection.run(
                RecordStateSQL.takeOverDeadProcess, operation: "releasing the leases of a dead process",
                JSONValue.array(dead.map(JSONValue.string)).serialized)
        }
    }
}
