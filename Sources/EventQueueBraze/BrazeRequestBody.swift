import EventQueue
import EventQueueDelivery

/// The body of one request to one endpoint (`path`), and which record sits at each position of each array (Braze
/// names refused objects by array and index).
struct BrazeRequestBody: Sendable {
    /// The endpoint, e.g. `/users/track`: one a request.
    var path = Self.trackPath
    var bytes: [UInt8]
    /// Record ids by array (`attributes`, `events`, `purchases`), in the order they appear in the body.
    var idsByArray: [String: [Int64]]
    /// The objects (or identifiers) the body carries, for logs.
    var count: Int

    static let trackPath = "/users/track"

    /// The arrays in the order Braze applies them; empty arrays are left out.
    static let arrayOrder: [RecordKind] = [.attribute, .event, .purchase]

    /// The most bytes a body adds around its objects: `{}`, three `"purchases":[]` and a comma per object
    /// (counted apart).
    static let envelopeBytes = 64

    /// Puts `records` together: each record's stored payload when it spells the object, else the object
    /// serialized (`encoded` holds objects serialized already, so a batch split by size is not serialized twice).
    init(_ records: [OutgoingRecord], encoded: BrazeEncodedObjects? = nil) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(records.count * 256 + 48)
        var idsByArray: [String: [Int64]] = [:]
        bytes.append(UInt8(ascii: "{"))
        for kind in Self.arrayOrder {
            var first = true
            for record in records where record.kind == kind {
                if first {
                    if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
                    bytes.append(UInt8(ascii: "\""))
                    bytes.append(contentsOf: kind.brazeArray.utf8)
                    bytes.append(contentsOf: "\":[".utf8)
                    first = false
                } else {
                    bytes.append(UInt8(ascii: ","))
                }
                if let json = encoded?.json[record.id] {
                    bytes.append(contentsOf: json)
                } else {
                    record.serializeObject(into: &bytes)
                }
                idsByArray[kind.brazeArray, default: []].append(record.id)
            }
            if !first { bytes.append(UInt8(ascii: "]")) }
        }
        bytes.append(UInt8(ascii: "}"))
        self.bytes = bytes
        self.idsByArray = idsByArray
        count = records.count
    }

    /// A body of one array, `{"<array>":[...]}`, for the endpoints of the users bucket (`/users/delete`'s
    /// `external_ids`, ...): `members` in order, the records they stand for in `ids`.
    init(path: String, array: String, members: [JSONValue], ids: [Int64]) {
        self.path = path
        bytes = Array(JSONValue.object([array: .array(members)]).serialized.utf8)
        idsByArray = [array: ids]
        count = members.count
    }
}

/// Each record's object as JSON, built once: the batcher measures requests with it and the bodies are put together
/// from it. Records whose stored payload spells the object (`OutgoingRecord.storedJSON`) need no serializing.
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
