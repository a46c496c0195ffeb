import EventQueueCommandLine
import Testing

/// The package's `/etc/eventqueue/eventqueue.conf`, read as systemd's `EnvironmentFile=` reads it.
@Suite struct SystemConfigurationTests {
    @Test(arguments: ["\n", "\r\n", "\r"])
    func everyLineEndingSeparatesTheSettings(ending: String) {
        let text = [
            "# written by the package", "EVENTQUEUE_DB=\"/var/lib/eventqueue/q.db\"",
            "  EVENTQUEUE_SOCKET = '/run/eventqueue/queued.sock'", "QUEUED_SINK=jsonl:-", "",
        ].joined(separator: ending)
        let configuration = SystemConfiguration(parsing: text)
        #expect(configuration.databasePath == "/var/lib/eventqueue/q.db")
        #expect(configuration.socketPath == "/run/eventqueue/queued.sock")
        #expect(configuration.values["QUEUED_SINK"] == "jsonl:-")
    }
}
