// The smallest useful writer: what a notification extension does. Opens the queue, enqueues one event, closes.
// Links only the EventQueue library (and so only SQLite), for measuring the extension's cold path.
//
// Usage: eventqueue-minimal-writer DB_PATH EVENT_NAME EXTERNAL_ID
import EventQueue

#if canImport(Glibc)
    import Glibc
#endif

func fail(_ message: String, status: Int32) -> Never {
    var line = message + "\n"
    line.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(status)
}

let arguments = CommandLine.arguments
guard arguments.count == 4 else {
    fail("usage: eventqueue-minimal-writer DB_PATH EVENT_NAME EXTERNAL_ID", status: 64)
}
do {
    let writer = try QueueWriter(path: arguments[1])
    let id = try writer.enqueue(Record.event(arguments[2], user: .externalID(arguments[3])))
    writer.close()
    print(id)
} catch {
    fail("eventqueue-minimal-writer: \(error)", status: 1)
}
