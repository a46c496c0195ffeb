// A writer for the chaos tests: loops enqueueing marked records through the EventQueue library (and so links
// only SQLite), logging each call the Jepsen way so a test can kill it at any moment and still judge the outcome:
//
//   attempt M1[,M2...]            written before the enqueue call
//   ok M1[,M2...] ID1[,ID2...]    written after it returned
//
// (the format `scripts/check-history` and HistoryChecker read). Markers are PREFIX-N; record N goes to the user
// `user-(N % USERS)` and its kind cycles event, attribute, purchase. Every record carries its marker as
// idempotency key, so `--retry` can re-enqueue the unconfirmed markers of a killed run without duplicating any.
//
// Usage: eventqueue-storm-writer DB LOG PREFIX [--users N] [--batch N] [--count N] [--pause-ms N]
//                                [--retry M1,M2...] [--stop FILE] [--busy-timeout-ms N]
import EventQueue

#if canImport(Glibc)
    import Glibc
#endif

func fail(_ message: String) -> Never {
    var line = "eventqueue-storm-writer: " + message + "\n"
    line.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(64)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 3 else {
    fail(
        "usage: eventqueue-storm-writer DB LOG PREFIX [--users N] [--batch N] [--count N] [--pause-ms N] "
            + "[--retry M1,M2...] [--stop FILE] [--busy-timeout-ms N]")
}
let (db, logPath, prefix) = (arguments[0], arguments[1], arguments[2])
var options: [String: String] = [:]
var rest = arguments.dropFirst(3).makeIterator()
while let name = rest.next() {
    guard let value = rest.next() else { fail("\(name) needs a value") }
    options[name] = value
}
let users = Int(options["--users"] ?? "8") ?? 8
let batch = max(1, Int(options["--batch"] ?? "1") ?? 1)
let count = Int(options["--count"] ?? "") ?? Int.max
let pause = UInt32(options["--pause-ms"] ?? "0") ?? 0
let retry = (options["--retry"] ?? "").split(separator: ",").map(String.init)
let stopFile = options["--stop"]
let busyTimeout = Int(options["--busy-timeout-ms"] ?? "5000") ?? 5_000

let log = open(logPath, O_WRONLY | O_APPEND | O_CREAT, 0o644)
guard log >= 0 else { fail("cannot open \(logPath)") }

/// One `write(2)` per line, so a kill leaves at most the line being written unterminated.
func record(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { _ = write(log, $0.baseAddress, $0.count) }
}

/// The record a marker stands for: its number picks the user and the kind.
func makeRecord(_ marker: String) -> Record {
    let number = Int(marker.split(separator: "-").last ?? "") ?? 0
    let user = UserIdentity.externalID("user-\(number % users)")
    switch number % 3 {
    case 1:
        return .attributes(
            ["marker": .string(marker), "storm_seq": .number(JSONNumber(number))], user: user,
            idempotencyKey: marker)
    case 2:
        return .purchase(
            productID: "sku-\(number % 5)", currency: "EUR", price: JSONNumber(1), user: user,
            properties: ["marker": .string(marker)], idempotencyKey: marker)
    default:
        return .event("storm", user: user, properties: ["marker": .string(marker)], idempotencyKey: marker)
    }
}

func enqueue(_ writer: QueueWriter, _ markers: [String]) {
    record("attempt " + markers.joined(separator: ","))
    do {
        let ids = try writer.enqueue(contentsOf: markers.map(makeRecord))
        record("ok " + markers.joined(separator: ",") + " " + ids.map(String.init).joined(separator: ","))
    } catch {
        // Not confirmed: the record stays indeterminate in the history. Busy or disk full: pause and go on.
        var line = "eventqueue-storm-writer: \(markers.first ?? ""): \(error)\n"
        line.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
        usleep(50_000)
    }
}

do {
    let writer = try QueueWriter(
        path: db, options: QueueOptions(busyTimeoutMilliseconds: busyTimeout, minimumFreeBytes: 0))
    for marker in retry { enqueue(writer, [marker]) }
    var next = 1
    while next <= count {
        if let stopFile, access(stopFile, F_OK) == 0 { break }
        let last = min(count, next + batch - 1)
        enqueue(writer, (next...last).map { "\(prefix)-\($0)" })
        next = last + 1
        if pause > 0 { usleep(pause * 1000) }
    }
    writer.close()
} catch {
    fail("\(error)")
}
