/// One analytics record: a Braze object of one kind (identifier included), exactly as the API will receive it.
///
/// Build one with the factory methods or from an NDJSON line; it is checked against Braze's rules at enqueue.
public struct Record: Sendable, Hashable {
    /// Which of Braze's arrays the object goes into.
    public var kind: RecordKind
    /// The Braze object: for an event `{"external_id": ..., "name": ..., "time": ..., "properties": {...}}`.
    public var object: JSONObject
    /// When set, a second enqueue with the same key returns the first record's id and writes nothing, so a
    /// writer can retry after an ambiguous failure without creating a duplicate.
    public var idempotencyKey: String?

    /// A record from a Braze object built by hand (the factory methods cover the common cases).
    public init(kind: RecordKind, object: JSONObject, idempotencyKey: String? = nil) {
        self.kind = kind
        self.object = object
        self.idempotencyKey = idempotencyKey
    }

    /// A custom event. `time` is ISO 8601; when `nil`, the enqueue time is used, so the event keeps the time
    /// of the interaction rather than the time of delivery.
    public static func event(
        _ name: String, user: UserIdentity, properties: JSONObject = [:], time: String? = nil,
        idempotencyKey: String? = nil
    ) -> Record {
        var object = JSONObject(members: [user.brazeMember])
        object["name"] = .string(name)
        if let time { object["time"] = .string(time) }
        if !properties.isEmpty { object["properties"] = .object(properties) }
        return Record(kind: .event, object: object, idempotencyKey: idempotencyKey)
    }

    /// Custom attributes and standard profile fields (`email`, `first_name`, `country`, ...) of one user.
    public static func attributes(
        _ attributes: JSONObject, user: UserIdentity, idempotencyKey: String? = nil
    ) -> Record {
        var object = JSONObject(members: [user.brazeMember])
        for member in attributes { object[member.key] = member.value }
        return Record(kind: .attribute, object: object, idempotencyKey: idempotencyKey)
    }

    /// A single attribute; `value` may be a Braze operation such as `["inc": 1]`, or `nil` to unset it.
    public static func attribute(
        _ key: String, _ value: JSONValue, user: UserIdentity, idempotencyKey: String? = nil
    ) -> Record {
        attributes(JSONObject(members: [.init(key: key, value: value)]), user: user, idempotencyKey: idempotencyKey)
    }

    /// A purchase. `currency` is an ISO 4217 code; `quantity` is 1 to 100.
    public static func purchase(
        productID: String, currency: String, price: JSONNumber, quantity: Int = 1, user: UserIdentity,
        properties: JSONObject = [:], time: String? = nil, idempotencyKey: String? = nil
    ) -> Record {
        var object = JSONObject(members: [user.brazeMember])
        object["product_id"] = .string(productID)
        object["currency"] = .string(currency)
        object["price"] = .number(price)
        object["quantity"] = .number(JSONNumber(quantity))
        if let time { object["time"] = .string(time) }
        if !properties.isEmpty { object["properties"] = .object(properties) }
        return Record(kind: .purchase, object: object, idempotencyKey: idempotencyKey)
    }
}
