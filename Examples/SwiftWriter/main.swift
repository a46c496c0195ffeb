// A complete writer in Swift: what an app extension or a helper process links to record analytics.
// docs/WRITERS.md walks through it; Tests/queuectlTests/WriterExamplesTests runs it and drains what it wrote.
//
// Usage: eventqueue-example-writer QUEUE_PATH EXTERNAL_ID
// Enqueues an event, an attribute and a purchase for the user, each with an idempotency key, and prints their ids.
import EventQueue

#if canImport(Glibc)
    import Glibc
#endif

/// Prints one line to stderr and exits: a writer usually has no one to ask, so say what to do.
func exitWithMessage(_ message: String, status: Int32) -> Never {
    var line = "eventqueue-example-writer: " + message + "\n"
    line.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(status)
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    exitWithMessage("usage: eventqueue-example-writer QUEUE_PATH EXTERNAL_ID", status: 64)
}
let user = UserIdentity.externalID(arguments[2])
// An idempotency key per interaction: enqueueing the same key again (a retry after a crash or a timeout) writes
// nothing and returns the first id, so retrying is always safe.
let interaction = "checkout-\(arguments[2])-2026-11-20T09:00:00Z"

do {
    let writer = try QueueWriter(path: arguments[1])
    defer { writer.close() }
    let event = try writer.enqueue(
        Record.event(
            "checkout_started", user: user, properties: ["cart_items": 3, "coupon": "WINTER"],
            idempotencyKey: interaction + "/event"))
    let attribute = try writer.enqueue(
        Record.attribute("loyalty_tier", "gold", user: user, idempotencyKey: interaction + "/attribute"))
    guard let price = JSONNumber(text: "9.99") else { exitWithMessage("9.99 is not a number", status: 70) }
    let purchase = try writer.enqueue(
        Record.purchase(
            productID: "sku-42", currency: "EUR", price: price, quantity: 2, user: user,
            idempotencyKey: interaction + "/purchase"))
    print(event, attribute, purchase)
} catch {
    // Every failure is a typed QueueError; each case says what to do.
    switch error {
    case .invalidRecord(let validation):
        // A bug in this writer (a field breaks Braze's rules): retrying will not help. Fix the record.
        exitWithMessage("record refused: \(validation)", status: 65)
    case .invalidIdempotencyKey:
        exitWithMessage("\(error)", status: 65)
    case .busy:
        // Another process held the write lock past the busy timeout: retry later with the same keys.
        exitWithMessage("queue busy, retry: \(error)", status: 75)
    case .diskFull:
        exitWithMessage("\(error)", status: 74)
    case .queueFull:
        // The queue is at the size limit its daemon set (--when-full refuse): nothing was stored. Keep the record
        // and retry once the queue has been delivered, with the same keys.
        exitWithMessage("\(error)", status: 74)
    case .cannotOpen, .readOnly:
        // Permissions or a missing directory: the user must be in the queue's group (see the README).
        exitWithMessage("\(error)", status: 73)
    case .notAQueueFile, .corrupt, .schemaTooNew:
        exitWithMessage("\(error)", status: 78)
    default:
        // Any other SQLite failure: an I/O problem. Keep the record and retry later with the same keys.
        exitWithMessage("\(error)", status: 74)
    }
}
