import EventQueue

/// A claimed record, parsed and ready for a sink.
public struct OutgoingRecord: Sendable, Hashable {
    public var id: Int64
    public var kind: RecordKind
    public var object: JSONObject {
        didSet { storedJSON = nil }
    }
    /// The stored payload, when it spells `object` exactly (nothing was filled in when it was read back): sinks
    /// send these bytes instead of serializing the object again (`serializeObject`). Cleared when `object` is set.
    public private(set) var storedJSON: String?
    public var userKey: String
    public var createdAtMilliseconds: Int64
    /// Failed attempts before this one.
    public var attempts: Int
    /// Set when the claimed row is a user's erasure: handed to `Sink.erase`, never `Sink.deliver`. Kept inside the
    /// record so that leases, retries and settlement treat it as a record.
    public var erasure: OutgoingErasure?

    public init(
        id: Int64, kind: RecordKind, object: JSONObject, userKey: String, createdAtMilliseconds: Int64,
        attempts: Int
    ) {
        self.id = id
        self.kind = kind
        self.object = object
        self.userKey = userKey
        self.createdAtMilliseconds = createdAtMilliseconds
        self.attempts = attempts
    }

    /// Parses and re-validates a claimed record (`StoredPayload`): a foreign writer may have stored something
    /// Braze would refuse, which is dead-lettered with the reason. An erasure row is read as one
    /// (`OutgoingErasure.prepare`), its grant checked with `erasureKey`.
    public static func prepare(
        _ claimed: ClaimedRecord, erasureKey: Result<ErasureKey, ErasureProblem>? = nil
    ) -> Result<OutgoingRecord, ValidationError> {
        if let erasure = claimed.erasure {
            return OutgoingErasure.prepare(claimed, erasure: erasure, key: erasureKey).mapError { problem in
                ValidationError(field: "erasure", rule: problem.description)
            }
        }
        switch StoredPayload.check(
            claimed.payload, kind: claimed.kind, createdAtMilliseconds: claimed.createdAtMilliseconds)
        {
        case .failure(let problem): return .failure(problem.validationError)
        case .success(let checked):
            var record = OutgoingRecord(
                id: claimed.id, kind: claimed.kind, object: checked.object, userKey: claimed.userKey,
                createdAtMilliseconds: claimed.createdAtMilliseconds, attempts: claimed.attempts)
            if checked.payloadIsObject { record.storedJSON = claimed.payload }
            return .success(record)
        }
    }

    /// The object as JSON, appended to `buffer`: the stored payload when it spells the object, else serialized.
    /// For a request body, where whitespace between tokens is allowed; not for a JSON Lines file (a foreign
    /// writer's payload may span lines).
    public func serializeObject(into buffer: inout [UInt8]) {
        if let storedJSON {
            buffer.append(contentsOf: storedJSON.utf8)
        } else {
            object.serialize(into: &buffer)
        }
    }
}
