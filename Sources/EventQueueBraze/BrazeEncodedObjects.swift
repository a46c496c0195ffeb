import EventQueue
import EventQueueDelivery

/// Each record's object as JSON, built once: the batcher measures requests with it (Braze's 4 MB body limit) and
/// the request bodies are put together from it. A record whose stored payload spells its object
/// (`OutgoingRecord.storedJSON`, every record our writers store) is sent as those bytes, so only the others are
/// serialized here.
struct BrazeEncodedObjects: Sendable {
    /// The serialized objects of the records without `storedJSON`, by id.
    var json: [Int64: [UInt8]] = [:]

    init(_ records: [OutgoingRecord]) {
        for record in records where record.storedJSON == nil {
            var bytes: [UInt8] = []
            record.object.serialize(into: &bytes)
            json[record.id] = bytes
        }
    }

    func size(of record: OutgoingRecord) -> Int {
        record.storedJSON?.utf8.count ?? json[record.id]?.count ?? 0
    }
}
