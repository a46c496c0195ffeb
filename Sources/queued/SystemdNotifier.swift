import EventQueueDelivery
import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// sd_notify(3) without libsystemd: one datagram to `$NOTIFY_SOCKET` per state change (`READY=1`, `STATUS=…`,
/// `WATCHDOG=1`, `STOPPING=1`). A path starting with `@` is in the abstract namespace. When the variable is
/// unset (not run by systemd) every call does nothing.
struct SystemdNotifier: Sendable {
    let socketPath: String?
    /// Half the watchdog timeout systemd expects pings within, when it asked for pings (`WATCHDOG_USEC`).
    let watchdogInterval: Duration?

    init() {
        socketPath = QueueEnvironment.variable("NOTIFY_SOCKET")
        let usec = QueueEnvironment.variable("WATCHDOG_USEC").flatMap(UInt64.init) ?? 0
        let forUs = QueueEnvironment.variable("WATCHDOG_PID").flatMap(Int32.init).map { $0 == getpid() } ?? true
        // At most an hour: any value parses, none may trap.
        watchdogInterval = usec > 0 && forUs ? .microseconds(Int64(min(usec / 2, 3_600_000_000))) : nil
    }

    func ready() { send("READY=1") }
    func stopping() { send("STOPPING=1") }
    func watchdog() { send("WATCHDOG=1") }
    func status(_ text: String) { send("STATUS=" + String(text.map { $0 == "\n" ? " " : $0 })) }

    /// Sends one datagram; failures are ignored, as sd_notify's are: the service works without a supervisor.
    func send(_ message: String) {
        guard let socketPath, !socketPath.isEmpty else { return }
        guard let address = try? UnixSocketAddress(notifySocket: socketPath) else { return }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let payload = Array(message.utf8)
        _ = address.withSocketAddress { socketAddress, length in
            payload.withUnsafeBytes { bytes in
                sendto(
                    descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT),
                    socketAddress, length)
            }
        }
    }
}
