import ArgumentParser

@main
struct QueueCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queuectl",
        abstract: "Administer an EventQueue file: enqueue, drain, inspect, dead letters.",
        discussion: """
            The queue file is --db, else $EVENTQUEUE_DB, else $STATE_DIRECTORY/queue.db, else \
            /var/lib/eventqueue/queue.db for root, else ~/.local/state/eventqueue/queue.db.
            Exit status: 0 success; 1 check found problems or an id was not found; 10/11/12 drain results \
            (some dead / records remain / sink misconfigured); 64 usage; 65 invalid record or input; \
            66 input file missing; 73 cannot open or create the queue file; 74 disk full or I/O error; \
            75 queue busy, retry; 78 not a queue file, corrupt, or schema too new.
            """,
        subcommands: [Enqueue.self, Drain.self, Status.self, Peek.self, Dead.self, Check.self]
    )
}
