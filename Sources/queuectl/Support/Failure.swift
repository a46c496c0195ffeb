import ArgumentParser
import EventQueue
import EventQueueDelivery

#if canImport(Glibc)
    import Glibc
#endif

/// Writes a one-line error to stderr and returns the exit code to throw.
/// `status` is one of the table's (`ExitStatus`, shared with `queued` and the README).
func fail(_ message: String, status: ExitStatus) -> ExitCode {
    writeStandardError("queuectl: error: " + message.replacingNewlines() + "\n")
    return ExitCode(status.rawValue)
}

/// The status comes from the one mapping of queue errors to exit statuses (`ExitStatus(QueueError)`).
func fail(_ error: QueueError) -> ExitCode {
    fail(error.description, status: ExitStatus(error))
}

func writeStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
}

func writeStandardOutput(_ text: String) {
    var text = text
    text.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let written = write(STDOUT_FILENO, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
            if written <= 0 {
                if written < 0, errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}

extension String {
    /// Errors are one line: embedded newlines would break log scraping. Every other control character is
    /// escaped too (`\x1B`): messages carry text from outside (a sink's answer, a row another writer stored),
    /// which must not rewrite the terminal.
    func replacingNewlines() -> String {
        ExternalText.escaped(self, newlinesAsSpace: true)
    }
}
