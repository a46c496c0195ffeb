import EventQueue
import EventQueueDelivery

/// Each record's object serialized once, by id: the batcher measures requests with it (Braze's 4 MB body
/// limit) and the request bodies are put together from it.
struct BrazeEncodedObjects: Sendable {
    var json: [Int64: [UInt8]] = [:]

    init(_ records: [OutgoingRecord]) {
        json.reserveCapacity(records.count)
        for record in records {
            var bytes: [UInt8] = []
            record.object.serialize(into: &bytes)
            json[record.id] = bytes
        }
    }

    func size(of record: OutgoingRecord) -> Int { json[record.id]?.count ?? 0 }
}
