import ArgumentParser
import EventQueue
import EventQueueDelivery
import EventQueueCommandLine

/// Writes a one-line error to stderr and returns the exit code (`ExitStatus`'s table) to throw.
func fail(_ message: String, status: ExitStatus) -> ExitCode {
    writeStandardError("queuectl: error: " + message.replacingNewlines() + "\n")
    return ExitCode(status.rawValue)
}

/// A queue error, with its status from `ExitStatus(QueueError)`.
func fail(_ error: QueueError) -> ExitCode {
    fail(error.description, status: ExitStatus(error))
}

extension String {
    /// Errors are one line: embedded newlines would break log scraping. Every other control character is
    /// escaped too (`\x1B`): messages carry text from outside (a sink's answer, a row another writer stored),
    /// which must not rewrite the terminal.
    func replacingNewlines() -> String {
        ExternalText.escaped(self, newlinesAsSpace: true)
    }
}
