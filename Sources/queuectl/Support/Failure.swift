import ArgumentParser
import EventQueue
import EventQueueDelivery
import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// Writes a one-line error to stderr and returns the exit code to throw.
/// `status` is one of the table's (`ExitStatus`, shared with `queued` and the exit-status table of docs/OPERATING.md).
func fail(_ message: String, status: ExitStatus) -> ExitCode {
    writeStandardError("queuectl: error: " + message.replacingNewlines() + "\n")
    return ExitCode(status.rawValue)
}

/// A queue error, with its status from the one mapping both tools use (`ExitStatus(QueueError)`).
func fail(_ error: QueueError) -> ExitCode {
    fail(error.description, status: ExitStatus(error))
}

func writeStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
}

func writeStandardOutput(_ text: String) {
    var text = text
    text.withUTF8 { _ = writeAll(STDOUT_FILENO, UnsafeRawBufferPointer($0)) }
}

/// Writes every byte to `fd`, going on after `EINTR` and short writes; the `errno` of a failure, or `nil`.
func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
    var offset = 0
    while offset < bytes.count {
        let written = write(fd, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
        if written < 0, errno == EINTR { continue }
        guard written > 0 else { return errno }
        offset += written
    }
    return nil
}

extension String {
    /// Errors are one line: embedded newlines would break log scraping. Every other control character is
    /// escaped too (`\x1B`): messages carry text from outside (a sink's answer, a row another writer stored),
    /// which must not rewrite the terminal.
    func replacingNewlines() -> String {
        ExternalText.escaped(self, newlinesAsSpace: true)
    }
}
