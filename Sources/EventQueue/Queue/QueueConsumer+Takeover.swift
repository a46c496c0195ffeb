extension QueueConsumer {
    /// Hands back at once every record leased by a process that no longer runs on this host, instead of leaving it
    /// (and its user's later records) until the lease expires; other hosts' leases are never touched. Returns how
    /// many. Call it holding the drain lock, so two drainers starting together do not both release and claim.
    @discardableResult
    public func releaseLeasesOfDeadProcesses() throws(QueueError) -> Int {
        let connection = file.connection
        // A lease token is `consumerID#sequence`.
        let dead = try connection.rows(RecordStateSQL.leaseOwners, operation: "reading lease owners") { $0.text(0) }
            .compactMap { $0 }.filter { ProcessIdentity.isRunning(owner: String($0.prefix { $0 != "#" })) == false }
        guard !dead.isEmpty else { return 0 }
        return try connection.write("releasing the leases of a dead process") {
            () throws(QueueError) in
            try connection.run(
                RecordStateSQL.takeOverDeadProcess, operation: "releasing the leases of a dead process",
                JSONValue.array(dead.map(JSONValue.string)).serialized)
        }
    }
}
