import Testing

@testable import EventQueueRecords

// MARK: - Cases

/// A record that must pass, and the user it must resolve to.
struct ValidRecordCase: Sendable, CustomTestStringConvertible {
    let name: String
    let kind: RecordKind
    let object: JSONObject
    let user: UserIdentity

    init(_ name: String, _ kind: RecordKind, _ object: JSONObject, user: UserIdentity = .externalID("u1")) {
        self.name = name
        self.kind = kind
        self.object = object
        self.user = user
    }

    var testDescription: String { name }
}

/// A record that must fail on exactly `field`, with a rule containing `rule`.
struct InvalidRecordCase: Sendable, CustomTestStringConvertible {
    let name: String
    let kind: RecordKind
    let object: JSONObject
    let field: String
    let rule: String

    init(_ name: String, _ kind: RecordKind, _ object: JSONObject, field: String, rule: String) {
        self.name = name
        self.kind = kind
        self.object = object
        self.field = field
        self.rule = rule
    }

    var testDescription: String { name }
}

// MARK: - Builders

/// `n` copies of `unit`.
private func repeated(_ count: Int, _ unit: String = "a") -> String {
    String(repeating: unit, count: count)
}

/// A JSON number from its text (`.null` if the text is not a number, which would fail the test that uses it).
private func jsonNumber(_ text: String) -> JSONValue {
    JSONNumber(text: text).map(JSONValue.number) ?? .null
}

/// `base` with `changes` set on it (existing keys keep their place) and `removing` taken out.
private func merged(_ base: JSONObject, _ changes: JSONObject, removing: [String] = []) -> JSONObject {
    var object = base
    for member in changes { object[member.key] = member.value }
    for key in removing { object[key] = nil }
    return object
}

/// An event of user `u1` named `played`, changed by `changes`.
private func eventObject(_ changes: JSONObject = [:], removing: [String] = []) -> JSONObject {
    merged(["external_id": "u1", "name": "played"], changes, removing: removing)
}

/// A purchase of user `u1`, changed by `changes`.
private func purchaseObject(_ changes: JSONObject = [:], removing: [String] = []) -> JSONObject {
    merged(["external_id": "u1", "product_id": "sku-1", "currency": "USD", "price": 9.99], changes, removing: removing)
}

/// An attributes object of user `u1` setting `attributes`.
private func attributesObject(_ attributes: JSONObject) -> JSONObject {
    merged(["external_id": "u1"], attributes)
}

/// An event whose only identifier is `identifier`.
private func eventNaming(_ identifier: JSONObject) -> JSONObject {
    merged(identifier, ["name": "played"])
}

/// An array of `count` distinct strings.
private func stringArray(_ count: Int) -> JSONValue {
    .array((0..<count).map { .string("item-\($0)") })
}

/// A flat object of string members that serializes to exactly `bytes` bytes of compact JSON: keys `k0000`,
/// `k0001`, ... (5 characters) and ASCII values of at most 255 characters, so there is nothing to escape.
private func objectSerializing(to bytes: Int) -> JSONObject {
    var members: [JSONObject.Member] = []
    var remaining = bytes - 2  // the braces
    while remaining > 0 {
        let overhead = (members.isEmpty ? 0 : 1) + 10  // comma, "kNNNN":""
        let length = min(255, remaining - overhead)
        // Keep what is left after a full member large enough for one more member.
        let value = length == 255 && (1...11).contains(remaining - overhead - 255) ? 200 : length
        let key = "k" + repeated(4 - String(members.count).count, "0") + String(members.count)
        members.append(.init(key: key, value: .string(repeated(value))))
        remaining -= overhead + value
    }
    return JSONObject(members: members)
}

/// An object with `count` members `p0`, `p1`, ... set to small numbers.
private func objectWithKeys(_ count: Int) -> JSONObject {
    JSONObject(members: (0..<count).map { .init(key: "p\($0)", value: .number(JSONNumber($0))) })
}

/// 255 Unicode scalars that are only 128 `Character`s: 127 times `e` + combining acute accent, then `e`.
private let combining255 = repeated(127, "e\u{301}") + "e"
/// 256 scalars, 128 `Character`s.
private let combining256 = repeated(128, "e\u{301}")
/// A family emoji: one `Character`, five scalars (three emoji joined by two zero-width joiners).
private let family = "👩\u{200D}👩\u{200D}👧"

private let sqlLooking = "Robert'); DROP TABLE records;--"

// MARK: - Valid records

private let validEvents: [ValidRecordCase] = [
    ValidRecordCase("event: minimal", .event, eventObject()),
    ValidRecordCase(
        "event: every field", .event,
        eventObject([
            "time": "2024-05-01T12:00:00Z",
            "app_id": "3b4e8c1a-0000-4000-8000-000000000000",
            "_update_existing_only": false,
            "properties": [
                "song": "Hey Jude", "duration": 431, "rating": 4.5, "liked": true, "genre": nil,
                "tags": ["rock", 1, false, nil, ["nested"]],
                "album": ["title": "Hey Jude", "year": 1968, "label": ["name": "Apple", "country": "GB"]],
                "released": "1968-08-26T00:00:00Z", "empty_string": "", "empty_array": [], "empty_object": [:],
            ],
        ])),
    ValidRecordCase(
        "event: time with fraction and offset", .event, eventObject(["time": "2024-05-01T12:00:00.123+02:00"])),
    ValidRecordCase("event: braze_id", .event, eventNaming(["braze_id": "5f1a"]), user: .brazeID("5f1a")),
    ValidRecordCase(
        "event: user_alias", .event, eventNaming(["user_alias": ["alias_name": "n1", "alias_label": "crm"]]),
        user: .alias(name: "n1", label: "crm")),
    ValidRecordCase(
        "event: user_alias in either order", .event,
        eventNaming(["user_alias": ["alias_label": "crm", "alias_name": "n1"]]), user: .alias(name: "n1", label: "crm")),
    ValidRecordCase("event: email", .event, eventNaming(["email": "a@b.co"]), user: .email("a@b.co")),
    ValidRecordCase(
        "event: non-ASCII email", .event, eventNaming(["email": "josé@exämple.com"]), user: .email("josé@exämple.com")),
    ValidRecordCase(
        "event: phone", .event, eventNaming(["phone": "+1 (555) 010-9999"]), user: .phone("+1 (555) 010-9999")),
    ValidRecordCase("event: phone of 3 digits", .event, eventNaming(["phone": "112"]), user: .phone("112")),
    ValidRecordCase(
        "event: phone of 20 digits", .event, eventNaming(["phone": .string("+" + repeated(20, "1"))]),
        user: .phone("+" + repeated(20, "1"))),
    ValidRecordCase(
        "event: phone with dots", .event, eventNaming(["phone": "555.010.9999"]), user: .phone("555.010.9999")),
    ValidRecordCase(
        "event: SQL-looking strings accepted as they are", .event,
        merged(
            eventNaming(["external_id": .string("1' OR '1'='1")]),
            ["name": .string(sqlLooking), "properties": ["query": "SELECT * FROM users WHERE 1=1; --"]]),
        user: .externalID("1' OR '1'='1")),
    ValidRecordCase("event: name of 255 ASCII characters", .event, eventObject(["name": .string(repeated(255))])),
    ValidRecordCase("event: name of 255 emoji", .event, eventObject(["name": .string(repeated(255, "🎵"))])),
    ValidRecordCase(
        "event: name of 255 scalars with combining marks", .event, eventObject(["name": .string(combining255)])),
    ValidRecordCase(
        "event: name of 51 family emoji (255 scalars)", .event, eventObject(["name": .string(repeated(51, family))])),
    ValidRecordCase(
        "event: external_id of 255 emoji", .event, eventNaming(["external_id": .string(repeated(255, "😀"))]),
        user: .externalID(repeated(255, "😀"))),
    ValidRecordCase(
        "event: property key and value of 255 characters", .event,
        eventObject([
            "properties": .object(JSONObject(members: [.init(key: repeated(255, "ß"), value: .string(combining255))]))
        ])),
    ValidRecordCase(
        "event: properties with 256 keys", .event, eventObject(["properties": .object(objectWithKeys(256))])),
    ValidRecordCase(
        "event: properties of exactly 50000 bytes", .event,
        eventObject(["properties": .object(objectSerializing(to: 50_000))])),
    ValidRecordCase(
        "event: properties large enough to be measured, under the limit", .event,
        eventObject(["properties": .object(objectSerializing(to: 20_000))])),
    ValidRecordCase(
        "event: nested property keys that look like properties rules do not apply below the top", .event,
        eventObject(["properties": ["meta": ["time": "x", "event_name": "y"]]])),
]

private let validPurchases: [ValidRecordCase] = [
    ValidRecordCase("purchase: minimal", .purchase, purchaseObject()),
    ValidRecordCase(
        "purchase: every field", .purchase,
        purchaseObject([
            "quantity": 2, "time": "2024-05-01T12:00:00Z", "app_id": "app", "_update_existing_only": true,
            "properties": ["color": "red", "size": 42],
        ])),
    ValidRecordCase("purchase: quantity 1", .purchase, purchaseObject(["quantity": 1])),
    ValidRecordCase("purchase: quantity 100", .purchase, purchaseObject(["quantity": 100])),
    ValidRecordCase("purchase: quantity written 3.0", .purchase, purchaseObject(["quantity": jsonNumber("3.0")])),
    ValidRecordCase("purchase: price 0", .purchase, purchaseObject(["price": 0])),
    ValidRecordCase("purchase: price as exponent", .purchase, purchaseObject(["price": jsonNumber("1.5e2")])),
    ValidRecordCase("purchase: EUR", .purchase, purchaseObject(["currency": "EUR"])),
    ValidRecordCase("purchase: JPY", .purchase, purchaseObject(["currency": "JPY"])),
    ValidRecordCase("purchase: CHF", .purchase, purchaseObject(["currency": "CHF"])),
    ValidRecordCase("purchase: CNY", .purchase, purchaseObject(["currency": "CNY"])),
    ValidRecordCase("purchase: INR", .purchase, purchaseObject(["currency": "INR"])),
    ValidRecordCase("purchase: BRL", .purchase, purchaseObject(["currency": "BRL"])),
    ValidRecordCase("purchase: GBP", .purchase, purchaseObject(["currency": "GBP"])),
    ValidRecordCase("purchase: ZWG (2024)", .purchase, purchaseObject(["currency": "ZWG"])),
    ValidRecordCase(
        "purchase: product_id of 255 emoji", .purchase, purchaseObject(["product_id": .string(repeated(255, "📦"))])),
    ValidRecordCase(
        "purchase: phone user", .purchase, merged(purchaseObject(removing: ["external_id"]), ["phone": "+15550100000"]),
        user: .phone("+15550100000")),
    ValidRecordCase(
        "purchase: email user", .purchase,
        merged(purchaseObject(removing: ["external_id"]), ["email": "buyer@shop.example"]),
        user: .email("buyer@shop.example")),
]

private let validAttributes: [ValidRecordCase] = [
    ValidRecordCase("attributes: one custom attribute", .attribute, attributesObject(["plan": "pro"])),
    ValidRecordCase(
        "attributes: every profile field", .attribute,
        attributesObject([
            "email": "a@b.co", "phone": "+15550109999", "first_name": "Ada", "last_name": "Lovelace",
            "home_city": "London", "gender": "F", "dob": "1815-12-10", "country": "GB", "language": "en",
            "time_zone": "Europe/London", "email_subscribe": "opted_in", "push_subscribe": "unsubscribed",
        ])),
    ValidRecordCase(
        "attributes: every profile field null", .attribute,
        attributesObject([
            "email": nil, "phone": nil, "first_name": nil, "last_name": nil, "home_city": nil, "gender": nil,
            "dob": nil, "country": nil, "language": nil, "time_zone": nil, "email_subscribe": nil,
            "push_subscribe": nil,
        ])),
    ValidRecordCase("attributes: empty first_name", .attribute, attributesObject(["first_name": ""])),
    ValidRecordCase("attributes: gender O", .attribute, attributesObject(["gender": "O"])),
    ValidRecordCase("attributes: gender N", .attribute, attributesObject(["gender": "N"])),
    ValidRecordCase("attributes: gender P", .attribute, attributesObject(["gender": "P"])),
    ValidRecordCase("attributes: gender M", .attribute, attributesObject(["gender": "M"])),
    ValidRecordCase("attributes: subscribed", .attribute, attributesObject(["email_subscribe": "subscribed"])),
    ValidRecordCase("attributes: dob on a leap day", .attribute, attributesObject(["dob": "2000-02-29"])),
    ValidRecordCase("attributes: country AX", .attribute, attributesObject(["country": "AX"])),
    ValidRecordCase("attributes: country SS", .attribute, attributesObject(["country": "SS"])),
    ValidRecordCase("attributes: language zh", .attribute, attributesObject(["language": "zh"])),
    ValidRecordCase("attributes: language pt", .attribute, attributesObject(["language": "pt"])),
    ValidRecordCase("attributes: time_zone UTC", .attribute, attributesObject(["time_zone": "UTC"])),
    ValidRecordCase(
        "attributes: time_zone of three segments", .attribute,
        attributesObject(["time_zone": "America/Argentina/Buenos_Aires"])),
    ValidRecordCase("attributes: time_zone Etc/GMT+5", .attribute, attributesObject(["time_zone": "Etc/GMT+5"])),
    ValidRecordCase("attributes: time_zone EST5EDT", .attribute, attributesObject(["time_zone": "EST5EDT"])),
    ValidRecordCase(
        "attributes: time_zone of 64 characters", .attribute,
        attributesObject(["time_zone": .string("A" + repeated(63, "b"))])),
    ValidRecordCase(
        "attributes: custom values of every kind", .attribute,
        attributesObject([
            "plan": "pro", "visits": 3, "ratio": 0.25, "vip": true, "churned": nil, "nickname": "",
            "favorite_colors": ["red", "blue"], "no_colors": [], "logins": ["inc": 1], "refunds": ["inc": -2.5],
            "tags": ["add": ["a", "b"]], "old_tags": ["remove": ["c"]], "sql": .string(sqlLooking),
            "address": ["street": "1 Main St", "geo": ["lat": 51.5, "lon": -0.12], "lines": ["a", 1, ["x": true]]],
            "empty_object": [:], "_merge_objects": true, "_update_existing_only": false,
        ])),
    ValidRecordCase(
        "attributes: operation names below the top of a nested object are plain keys", .attribute,
        attributesObject(["stats": ["counts": ["inc": "not a number", "add": 1]]])),
    ValidRecordCase(
        "attributes: custom string and array item of 255 emoji", .attribute,
        attributesObject(["motto": .string(repeated(255, "🙂")), "words": [.string(repeated(255, "🙂"))]])),
    ValidRecordCase("attributes: array of 500 items", .attribute, attributesObject(["colors": stringArray(500)])),
    ValidRecordCase("attributes: add of 500 items", .attribute, attributesObject(["tags": ["add": stringArray(500)]])),
    ValidRecordCase(
        "attributes: remove of 500 items", .attribute, attributesObject(["tags": ["remove": stringArray(500)]])),
    ValidRecordCase(
        "attributes: nested object of exactly 100000 bytes", .attribute,
        attributesObject(["profile": .object(objectSerializing(to: 100_000))])),
    ValidRecordCase(
        "attributes: custom key of 255 characters", .attribute,
        .init(members: [.init(key: "external_id", value: "u1"), .init(key: repeated(255, "k"), value: 1)])),
    // Identity subtleties: email and phone are profile fields when another identifier names the user.
    ValidRecordCase(
        "attributes: external_id names the user, email and phone are set", .attribute,
        ["external_id": "u1", "email": "new@b.co", "phone": "+4930123456"]),
    ValidRecordCase(
        "attributes: braze_id names the user, email is unset", .attribute, ["braze_id": "b1", "email": nil],
        user: .brazeID("b1")),
    ValidRecordCase(
        "attributes: user_alias names the user, phone is unset", .attribute,
        ["user_alias": ["alias_name": "n", "alias_label": "l"], "phone": nil], user: .alias(name: "n", label: "l")),
    ValidRecordCase(
        "attributes: email names the user, phone is set", .attribute,
        ["email": "a@b.co", "phone": "+15550100000"], user: .email("a@b.co")),
    ValidRecordCase(
        "attributes: phone written before email, email still names the user", .attribute,
        ["phone": "+15550100000", "email": "a@b.co"], user: .email("a@b.co")),
    ValidRecordCase(
        "attributes: email names the user, phone is unset", .attribute, ["email": "a@b.co", "phone": nil],
        user: .email("a@b.co")),
    ValidRecordCase(
        "attributes: email names the user and sets an attribute", .attribute,
        ["email": "a@b.co", "first_name": "A", "_update_existing_only": true], user: .email("a@b.co")),
    ValidRecordCase(
        "attributes: phone names the user", .attribute, ["phone": "+15550100000", "first_name": "A"],
        user: .phone("+15550100000")),
]

// MARK: - Invalid records, one table per group of rules

/// Who the record is about (events and purchases), and the format of each identifier.
private let identityCases: [InvalidRecordCase] = [
    InvalidRecordCase(
        "no identifier", .event, ["name": "played"], field: "record",
        rule: "must name a user with one of external_id, braze_id, user_alias, email or phone"),
    InvalidRecordCase(
        "purchase without identifier", .purchase, purchaseObject(removing: ["external_id"]), field: "record",
        rule: "must name a user"),
    InvalidRecordCase(
        "two identifiers", .event, eventObject(["email": "a@b.co"]), field: "record",
        rule: "names more than one user (external_id and email); give exactly one"),
    InvalidRecordCase(
        "three identifiers", .event, eventObject(["braze_id": "b", "phone": "+15550100000"]), field: "record",
        rule: "names more than one user (external_id, braze_id and phone)"),
    InvalidRecordCase(
        "purchase with two identifiers", .purchase,
        purchaseObject(["user_alias": ["alias_name": "n", "alias_label": "l"]]), field: "record",
        rule: "names more than one user (external_id and user_alias)"),
    InvalidRecordCase(
        "email and phone on an event", .event, eventNaming(["email": "a@b.co", "phone": "+15550100000"]),
        field: "record", rule: "names more than one user (email and phone)"),
    InvalidRecordCase(
        "empty external_id", .event, eventObject(["external_id": ""]), field: "external_id",
        rule: "must be 1 to 255 characters (got 0)"),
    InvalidRecordCase(
        "external_id of 256 characters", .event, eventObject(["external_id": .string(repeated(256))]),
        field: "external_id",
        rule: "must be 1 to 255 characters (got 256)"),
    InvalidRecordCase(
        "external_id of 256 emoji", .event, eventObject(["external_id": .string(repeated(256, "😀"))]),
        field: "external_id",
        rule: "must be 1 to 255 characters (got 256)"),
    InvalidRecordCase(
        "external_id of 256 scalars in 128 characters", .event, eventObject(["external_id": .string(combining256)]),
        field: "external_id", rule: "(got 256)"),
    InvalidRecordCase(
        "numeric external_id", .event, eventObject(["external_id": 42]), field: "external_id",
        rule: "must be a string (got number)"),
    InvalidRecordCase(
        "external_id with a newline", .event, eventObject(["external_id": "u\n1"]), field: "external_id",
        rule: "must not contain control characters (found U+000A)"),
    InvalidRecordCase(
        "external_id with a C1 control", .event, eventObject(["external_id": "u\u{85}1"]), field: "external_id",
        rule: "must not contain control characters (found U+0085)"),
    InvalidRecordCase(
        "external_id with DEL", .event, eventObject(["external_id": "u\u{7F}"]), field: "external_id",
        rule: "(found U+007F)"),
    InvalidRecordCase(
        "null braze_id", .event, eventNaming(["braze_id": nil]), field: "braze_id", rule: "must be a string (got null)"),
    InvalidRecordCase(
        "braze_id with a tab", .event, eventNaming(["braze_id": "b\t"]), field: "braze_id",
        rule: "must not contain control characters (found U+0009)"),
    InvalidRecordCase(
        "null email naming the user", .event, eventNaming(["email": nil]), field: "email",
        rule: "must be a string (got null): it names the user"),
    InvalidRecordCase(
        "null phone naming the user", .purchase, merged(purchaseObject(removing: ["external_id"]), ["phone": nil]),
        field: "phone", rule: "must be a string (got null)"),
    InvalidRecordCase(
        "user_alias not an object", .event, eventNaming(["user_alias": "n"]), field: "user_alias",
        rule: "must be an object with alias_name and alias_label (got string)"),
    InvalidRecordCase(
        "user_alias without alias_label", .event, eventNaming(["user_alias": ["alias_name": "n"]]),
        field: "user_alias.alias_label", rule: "is required"),
    InvalidRecordCase(
        "user_alias without alias_name", .event, eventNaming(["user_alias": ["alias_label": "l"]]),
        field: "user_alias.alias_name", rule: "is required"),
    InvalidRecordCase(
        "user_alias with another key", .event,
        eventNaming(["user_alias": ["alias_name": "n", "alias_label": "l", "external_id": "u1"]]),
        field: "user_alias.external_id", rule: "is not a field of a user alias"),
    InvalidRecordCase(
        "empty alias_name", .event, eventNaming(["user_alias": ["alias_name": "", "alias_label": "l"]]),
        field: "user_alias.alias_name", rule: "must be 1 to 255 characters (got 0)"),
    InvalidRecordCase(
        "alias_label of 256 characters", .event,
        eventNaming(["user_alias": ["alias_name": "n", "alias_label": .string(repeated(256))]]),
        field: "user_alias.alias_label", rule: "must be 1 to 255 characters (got 256)"),
    InvalidRecordCase(
        "numeric alias_label", .event, eventNaming(["user_alias": ["alias_name": "n", "alias_label": 1]]),
        field: "user_alias.alias_label", rule: "must be a string (got number)"),
    // Email format (the same rules apply to email as a profile field, below).
    InvalidRecordCase(
        "email without @", .event, eventNaming(["email": "ab.co"]), field: "email",
        rule: "must be an email address with exactly one @ (found 0)"),
    InvalidRecordCase(
        "email with two @", .event, eventNaming(["email": "a@b@c.co"]), field: "email", rule: "exactly one @ (found 2)"),
    InvalidRecordCase(
        "email without local part", .event, eventNaming(["email": "@b.co"]), field: "email",
        rule: "with a non-empty part before the @"),
    InvalidRecordCase(
        "email domain without dot", .event, eventNaming(["email": "a@localhost"]), field: "email",
        rule: "whose domain (after the @) has a dot, not at either end"),
    InvalidRecordCase(
        "email domain starting with a dot", .event, eventNaming(["email": "a@.b.co"]), field: "email",
        rule: "whose domain"),
    InvalidRecordCase(
        "email domain ending with a dot", .event, eventNaming(["email": "a@b.co."]), field: "email",
        rule: "whose domain"),
    InvalidRecordCase(
        "email with empty domain", .event, eventNaming(["email": "a@"]), field: "email", rule: "whose domain"),
    InvalidRecordCase(
        "email with a space", .event, eventNaming(["email": "a b@c.co"]), field: "email",
        rule: "without whitespace or control characters"),
    InvalidRecordCase(
        "email with a no-break space", .event, eventNaming(["email": "a@b.co\u{A0}"]), field: "email",
        rule: "without whitespace"),
    InvalidRecordCase(
        "email with a line separator", .event, eventNaming(["email": "a\u{2028}@b.co"]), field: "email",
        rule: "without whitespace"),
    InvalidRecordCase(
        "email with a control character", .event, eventNaming(["email": "a\u{0}@b.co"]), field: "email",
        rule: "without whitespace or control characters"),
    InvalidRecordCase(
        "email of 256 characters", .event, eventNaming(["email": .string(repeated(250) + "@b.com")]), field: "email",
        rule: "must be 1 to 255 characters (got 256)"),
    InvalidRecordCase(
        "empty email", .event, eventNaming(["email": ""]), field: "email", rule: "must be 1 to 255 characters (got 0)"),
    InvalidRecordCase(
        "numeric email", .event, eventNaming(["email": 1]), field: "email", rule: "must be a string (got number)"),
    // Phone format.
    InvalidRecordCase(
        "phone of 2 digits", .event, eventNaming(["phone": "12"]), field: "phone",
        rule: "must be a phone number with 3 to 20 digits (got 2)"),
    InvalidRecordCase(
        "phone of 21 digits", .event, eventNaming(["phone": .string("+" + repeated(21, "1"))]), field: "phone",
        rule: "with 3 to 20 digits (got 21)"),
    InvalidRecordCase(
        "phone of separators only", .event, eventNaming(["phone": "+(--)"]), field: "phone", rule: "(got 0)"),
    InvalidRecordCase(
        "phone with letters", .event, eventNaming(["phone": "+1-555-CALL"]), field: "phone",
        rule: "(found \"C\" at character 8)"),
    InvalidRecordCase(
        "phone with + inside", .event, eventNaming(["phone": "1+555"]), field: "phone",
        rule: "an optional leading +, then digits and the separators space - . ( ) (found \"+\" at character 2)"),
    InvalidRecordCase(
        "phone with a tab", .event, eventNaming(["phone": "555\t0100"]), field: "phone", rule: "(found U+0009"),
    InvalidRecordCase(
        "phone with a slash", .event, eventNaming(["phone": "555/0100"]), field: "phone", rule: "(found \"/\""),
    InvalidRecordCase(
        "empty phone", .event, eventNaming(["phone": ""]), field: "phone", rule: "must be 1 to 255 characters (got 0)"),
]

/// Who an attributes object is about: email and phone are identifiers or profile fields.
private let attributeIdentityCases: [InvalidRecordCase] = [
    InvalidRecordCase(
        "no identifier", .attribute, ["first_name": "A"], field: "record",
        rule: "must name a user with one of external_id, braze_id, user_alias, email or phone"),
    InvalidRecordCase(
        "only flags", .attribute, ["_update_existing_only": true], field: "record", rule: "must name a user"),
    InvalidRecordCase(
        "external_id and braze_id", .attribute, ["external_id": "u1", "braze_id": "b1", "first_name": "A"],
        field: "record", rule: "names more than one user (external_id and braze_id); give exactly one"),
    InvalidRecordCase(
        "braze_id and user_alias, with email", .attribute,
        ["email": "a@b.co", "braze_id": "b1", "user_alias": ["alias_name": "n", "alias_label": "l"]],
        field: "record", rule: "names more than one user (braze_id and user_alias)"),
    InvalidRecordCase(
        "email naming the user is null", .attribute, ["email": nil, "first_name": "A"], field: "email",
        rule: "must be a string (got null): it names the user, so it cannot be unset"),
    InvalidRecordCase(
        "email naming the user is null even with a phone", .attribute,
        ["email": nil, "phone": "+15550100000", "first_name": "A"], field: "email", rule: "(got null)"),
    InvalidRecordCase(
        "phone naming the user is null", .attribute, ["phone": nil, "first_name": "A"], field: "phone",
        rule: "must be a string (got null): it names the user"),
    InvalidRecordCase(
        "email naming the user is malformed", .attribute, ["email": "nope", "phone": "+15550100000"], field: "email",
        rule: "exactly one @ (found 0)"),
    InvalidRecordCase(
        "phone naming the user is malformed", .attribute, ["phone": "12", "first_name": "A"], field: "phone",
        rule: "with 3 to 20 digits (got 2)"),
    InvalidRecordCase(
        "email set as a profile field is malformed", .attribute, ["external_id": "u1", "email": "a@b"],
        field: "email", rule: "whose domain"),
    InvalidRecordCase(
        "email set as a profile field is a number", .attribute, ["external_id": "u1", "email": 5], field: "email",
        rule: "must be an email address or null (got number)"),
    InvalidRecordCase(
        "phone set as a profile field is malformed", .attribute, ["email": "a@b.co", "phone": "call me"],
        field: "phone", rule: "must be a phone number"),
    InvalidRecordCase(
        "phone set as a profile field is a boolean", .attribute, ["braze_id": "b1", "phone": true], field: "phone",
        rule: "must be a phone number or null (got boolean)"),
    InvalidRecordCase(
        "email alone sets nothing", .attribute, ["email": "a@b.co"], field: "record",
        rule: "must set at least one attribute"),
    InvalidRecordCase(
        "phone alone sets nothing", .attribute, ["phone": "+15550100000"], field: "record",
        rule: "must set at least one attribute"),
    InvalidRecordCase(
        "external_id alone sets nothing", .attribute, ["external_id": "u1"], field: "record",
        rule: "must set at least one attribute"),
    InvalidRecordCase(
        "flags are not attributes", .attribute,
        ["external_id": "u1", "_update_existing_only": true, "_merge_objects": true], field: "record",
        rule: "must set at least one attribute"),
    InvalidRecordCase(
        "_merge_objects not a boolean", .attribute, attributesObject(["_merge_objects": "yes", "a": 1]),
        field: "_merge_objects", rule: "must be a boolean (got string)"),
    InvalidRecordCase(
        "_update_existing_only not a boolean", .attribute, attributesObject(["_update_existing_only": 1, "a": 1]),
        field: "_update_existing_only", rule: "must be a boolean (got number)"),
]

/// Event fields.
private let eventCases: [InvalidRecordCase] = [
    InvalidRecordCase("missing name", .event, eventObject(removing: ["name"]), field: "name", rule: "is required"),
    InvalidRecordCase(
        "empty name", .event, eventObject(["name": ""]), field: "name", rule: "must be 1 to 255 characters (got 0)"),
    InvalidRecordCase(
        "name of 256 characters", .event, eventObject(["name": .string(repeated(256))]), field: "name",
        rule: "must be 1 to 255 characters (got 256)"),
    InvalidRecordCase(
        "name of 256 emoji", .event, eventObject(["name": .string(repeated(256, "🎵"))]), field: "name",
        rule: "(got 256)"),
    InvalidRecordCase(
        "name of 256 scalars in 128 characters", .event, eventObject(["name": .string(combining256)]), field: "name",
        rule: "(got 256)"),
    InvalidRecordCase(
        "name of 52 family emoji (260 scalars)", .event, eventObject(["name": .string(repeated(52, family))]),
        field: "name",
        rule: "(got 260)"),
    InvalidRecordCase(
        "numeric name", .event, eventObject(["name": 1]), field: "name", rule: "must be a string (got number)"),
    InvalidRecordCase(
        "null name", .event, eventObject(["name": nil]), field: "name", rule: "must be a string (got null)"),
    InvalidRecordCase(
        "time not ISO 8601", .event, eventObject(["time": "yesterday"]), field: "time",
        rule: "must be an ISO 8601 timestamp such as 2024-05-01T12:00:00Z (got \"yesterday\")"),
    InvalidRecordCase(
        "time as a date only", .event, eventObject(["time": "2024-05-01"]), field: "time", rule: "ISO 8601 timestamp"),
    InvalidRecordCase(
        "time as a number", .event, eventObject(["time": 1_714_564_800]), field: "time",
        rule: "must be an ISO 8601 timestamp string (got number)"),
    InvalidRecordCase("null time", .event, eventObject(["time": nil]), field: "time", rule: "(got null)"),
    InvalidRecordCase(
        "empty app_id", .event, eventObject(["app_id": ""]), field: "app_id",
        rule: "must be 1 to 255 characters (got 0)"),
    InvalidRecordCase(
        "app_id of 256 characters", .event, eventObject(["app_id": .string(repeated(256))]), field: "app_id",
        rule: "(got 256)"),
    InvalidRecordCase(
        "numeric app_id", .event, eventObject(["app_id": 1]), field: "app_id", rule: "must be a string (got number)"),
    InvalidRecordCase(
        "_update_existing_only as a string", .event, eventObject(["_update_existing_only": "true"]),
        field: "_update_existing_only", rule: "must be a boolean (got string)"),
    InvalidRecordCase(
        "unknown field", .event, eventObject(["user_id": "u1"]), field: "user_id",
        rule: "is not a field of a Braze event object"),
    InvalidRecordCase(
        "_merge_objects on an event", .event, eventObject(["_merge_objects": true]), field: "_merge_objects",
        rule: "is not a field of a Braze event object"),
    InvalidRecordCase(
        "purchase field on an event", .event, eventObject(["product_id": "sku"]), field: "product_id",
        rule: "is not a field of a Braze event object"),
    InvalidRecordCase(
        "purchase field price on an event", .event, eventObject(["price": 1]), field: "price",
        rule: "is not a field of a Braze event object"),
    InvalidRecordCase(
        "top-level key in the wrong case", .event, eventObject(["Name": "x"]), field: "Name", rule: "is not a field"),
    InvalidRecordCase(
        "empty top-level key", .event, eventObject(["": "x"]), field: "record", rule: "must not have an empty key"),
]

/// Purchase fields.
private let purchaseCases: [InvalidRecordCase] = [
    InvalidRecordCase(
        "missing product_id", .purchase, purchaseObject(removing: ["product_id"]), field: "product_id",
        rule: "is required"),
    InvalidRecordCase(
        "missing currency", .purchase, purchaseObject(removing: ["currency"]), field: "currency", rule: "is required"),
    InvalidRecordCase(
        "missing price", .purchase, purchaseObject(removing: ["price"]), field: "price", rule: "is required"),
    InvalidRecordCase(
        "empty product_id", .purchase, purchaseObject(["product_id": ""]), field: "product_id",
        rule: "must be 1 to 255 characters (got 0)"),
    InvalidRecordCase(
        "product_id of 256 characters", .purchase, purchaseObject(["product_id": .string(repeated(256, "é"))]),
        field: "product_id", rule: "(got 256)"),
    InvalidRecordCase(
        "numeric product_id", .purchase, purchaseObject(["product_id": 7]), field: "product_id",
        rule: "must be a string (got number)"),
    InvalidRecordCase(
        "lowercase currency", .purchase, purchaseObject(["currency": "usd"]), field: "currency",
        rule: "must be an active ISO 4217 currency code in uppercase, such as USD (got \"usd\")"),
    InvalidRecordCase(
        "withdrawn currency HRK", .purchase, purchaseObject(["currency": "HRK"]), field: "currency",
        rule: "(got \"HRK\")"),
    InvalidRecordCase(
        "withdrawn currency ZWL", .purchase, purchaseObject(["currency": "ZWL"]), field: "currency",
        rule: "(got \"ZWL\")"),
    InvalidRecordCase(
        "withdrawn currency VEF", .purchase, purchaseObject(["currency": "VEF"]), field: "currency",
        rule: "(got \"VEF\")"),
    InvalidRecordCase(
        "unassigned currency", .purchase, purchaseObject(["currency": "ABC"]), field: "currency", rule: "(got \"ABC\")"),
    InvalidRecordCase(
        "currency symbol", .purchase, purchaseObject(["currency": "$"]), field: "currency", rule: "(got \"$\")"),
    InvalidRecordCase(
        "four-letter currency", .purchase, purchaseObject(["currency": "USDT"]), field: "currency",
        rule: "(got \"USDT\")"),
    InvalidRecordCase(
        "numeric currency", .purchase, purchaseObject(["currency": 840]), field: "currency", rule: "(got number)"),
    InvalidRecordCase(
        "price as a string", .purchase, purchaseObject(["price": "9.99"]), field: "price",
        rule: "must be a number (got string)"),
    InvalidRecordCase("null price", .purchase, purchaseObject(["price": nil]), field: "price", rule: "(got null)"),
    InvalidRecordCase(
        "quantity 0", .purchase, purchaseObject(["quantity": 0]), field: "quantity",
        rule: "must be an integer from 1 to 100 (got 0)"),
    InvalidRecordCase(
        "quantity 101", .purchase, purchaseObject(["quantity": 101]), field: "quantity", rule: "(got 101)"),
    InvalidRecordCase(
        "negative quantity", .purchase, purchaseObject(["quantity": -1]), field: "quantity", rule: "(got -1)"),
    InvalidRecordCase(
        "fractional quantity", .purchase, purchaseObject(["quantity": jsonNumber("1.5")]), field: "quantity",
        rule: "(got 1.5)"),
    InvalidRecordCase(
        "quantity as a string", .purchase, purchaseObject(["quantity": "2"]), field: "quantity",
        rule: "must be an integer from 1 to 100 (got string)"),
    InvalidRecordCase(
        "time not ISO 8601", .purchase, purchaseObject(["time": "05/01/2024"]), field: "time", rule: "ISO 8601"),
    InvalidRecordCase(
        "empty app_id", .purchase, purchaseObject(["app_id": ""]), field: "app_id", rule: "(got 0)"),
    InvalidRecordCase(
        "event field on a purchase", .purchase, purchaseObject(["name": "bought"]), field: "name",
        rule: "is not a field of a Braze purchase object"),
    InvalidRecordCase(
        "_update_existing_only not a boolean", .purchase, purchaseObject(["_update_existing_only": nil]),
        field: "_update_existing_only", rule: "must be a boolean (got null)"),
    InvalidRecordCase(
        "reserved property on a purchase", .purchase, purchaseObject(["properties": ["time": "x"]]),
        field: "properties.time", rule: "is reserved"),
]

/// `properties` of events (and purchases, which share the rules).
private let propertiesCases: [InvalidRecordCase] = [
    InvalidRecordCase(
        "properties not an object", .event, eventObject(["properties": ["a"]]), field: "properties",
        rule: "must be an object (got array)"),
    InvalidRecordCase(
        "null properties", .event, eventObject(["properties": nil]), field: "properties",
        rule: "must be an object (got null)"),
    InvalidRecordCase(
        "empty property key", .event, eventObject(["properties": ["": 1]]), field: "properties",
        rule: "must not have an empty key"),
    InvalidRecordCase(
        "property key starting with $", .event, eventObject(["properties": ["$price": 1]]), field: "properties.$price",
        rule: "is not a valid property name: it must not start with $"),
    InvalidRecordCase(
        "property key of 256 characters", .event,
        eventObject(["properties": .object(JSONObject(members: [.init(key: repeated(256, "ß"), value: 1)]))]),
        field: "properties." + repeated(256, "ß"), rule: "must be 1 to 255 characters (got 256)"),
    InvalidRecordCase(
        "reserved property time", .event, eventObject(["properties": ["time": "2024-05-01T12:00:00Z"]]),
        field: "properties.time", rule: "is reserved by Braze"),
    InvalidRecordCase(
        "reserved property event_name", .event, eventObject(["properties": ["event_name": "x"]]),
        field: "properties.event_name", rule: "is reserved by Braze"),
    InvalidRecordCase(
        "property string of 256 characters", .event, eventObject(["properties": ["song": .string(repeated(256))]]),
        field: "properties.song", rule: "must be at most 255 characters (got 256)"),
    InvalidRecordCase(
        "property string of 256 scalars in 128 characters", .event,
        eventObject(["properties": ["song": .string(combining256)]]), field: "properties.song", rule: "(got 256)"),
    InvalidRecordCase(
        "string in an array of 256 characters", .event,
        eventObject(["properties": ["tags": ["ok", .string(repeated(256))]]]), field: "properties.tags[1]",
        rule: "must be at most 255 characters (got 256)"),
    InvalidRecordCase(
        "string in a nested object of 256 characters", .event,
        eventObject(["properties": ["album": ["title": .string(repeated(256))]]]), field: "properties.album.title",
        rule: "(got 256)"),
    InvalidRecordCase(
        "nested key starting with $", .event, eventObject(["properties": ["album": ["$id": 1]]]),
        field: "properties.album.$id", rule: "is not a valid key: it must not start with $"),
    InvalidRecordCase(
        "empty nested key", .event, eventObject(["properties": ["album": ["": 1]]]), field: "properties.album",
        rule: "must not have an empty key"),
    InvalidRecordCase(
        "nested key of 256 characters", .event,
        eventObject(["properties": ["album": .object(JSONObject(members: [.init(key: repeated(256), value: 1)]))]]),
        field: "properties.album." + repeated(256), rule: "must be 1 to 255 characters (got 256)"),
    InvalidRecordCase(
        "deep path through arrays and objects", .event,
        eventObject(["properties": ["tracks": [["title": "a"], ["meta": [["$bad": 1]]]]]]),
        field: "properties.tracks[1].meta[0].$bad", rule: "must not start with $"),
    InvalidRecordCase(
        "257 properties", .event, eventObject(["properties": .object(objectWithKeys(257))]), field: "properties",
        rule: "must have at most 256 keys (got 257)"),
    InvalidRecordCase(
        "properties of 50001 bytes", .event, eventObject(["properties": .object(objectSerializing(to: 50_001))]),
        field: "properties", rule: "must serialize to at most 50000 bytes (got 50001)"),
    InvalidRecordCase(
        "properties over 50000 bytes only once escaped", .event,
        eventObject([
            "properties": .object(
                JSONObject(members: (0..<100).map { .init(key: "q\($0)", value: .string(repeated(250, "\""))) }))
        ]),
        field: "properties", rule: "must serialize to at most 50000 bytes (got 50891)"),
]

/// Standard profile fields of an attributes object.
private let profileFieldCases: [InvalidRecordCase] = [
    InvalidRecordCase(
        "first_name of 256 characters", .attribute, attributesObject(["first_name": .string(repeated(256))]),
        field: "first_name", rule: "must be at most 255 characters (got 256)"),
    InvalidRecordCase(
        "numeric first_name", .attribute, attributesObject(["first_name": 5]), field: "first_name",
        rule: "must be a string or null (got number)"),
    InvalidRecordCase(
        "last_name of 256 emoji", .attribute, attributesObject(["last_name": .string(repeated(256, "🙂"))]),
        field: "last_name", rule: "(got 256)"),
    InvalidRecordCase(
        "home_city as an object", .attribute, attributesObject(["home_city": ["name": "x"]]), field: "home_city",
        rule: "must be a string or null (got object)"),
    InvalidRecordCase(
        "gender spelled out", .attribute, attributesObject(["gender": "male"]), field: "gender",
        rule: "must be one of M, F, O, N, P or null (got \"male\")"),
    InvalidRecordCase(
        "lowercase gender", .attribute, attributesObject(["gender": "f"]), field: "gender", rule: "(got \"f\")"),
    InvalidRecordCase(
        "gender U", .attribute, attributesObject(["gender": "U"]), field: "gender", rule: "(got \"U\")"),
    InvalidRecordCase(
        "numeric gender", .attribute, attributesObject(["gender": 1]), field: "gender", rule: "(got number)"),
    InvalidRecordCase(
        "dob not a calendar date", .attribute, attributesObject(["dob": "1990-02-30"]), field: "dob",
        rule: "must be a date of birth in the form YYYY-MM-DD, or null (got \"1990-02-30\")"),
    InvalidRecordCase(
        "dob with slashes", .attribute, attributesObject(["dob": "1990/01/01"]), field: "dob", rule: "YYYY-MM-DD"),
    InvalidRecordCase(
        "dob as a timestamp", .attribute, attributesObject(["dob": "1990-01-01T00:00:00Z"]), field: "dob",
        rule: "YYYY-MM-DD"),
    InvalidRecordCase(
        "numeric dob", .attribute, attributesObject(["dob": 19_900_101]), field: "dob", rule: "(got number)"),
    InvalidRecordCase(
        "lowercase country", .attribute, attributesObject(["country": "us"]), field: "country",
        rule: "must be an ISO 3166-1 alpha-2 country code in uppercase, such as US, or null (got \"us\")"),
    InvalidRecordCase(
        "country UK (reserved, not assigned)", .attribute, attributesObject(["country": "UK"]), field: "country",
        rule: "(got \"UK\")"),
    InvalidRecordCase(
        "country alpha-3", .attribute, attributesObject(["country": "USA"]), field: "country", rule: "(got \"USA\")"),
    InvalidRecordCase(
        "country name", .attribute, attributesObject(["country": "Germany"]), field: "country",
        rule: "(got \"Germany\")"),
    InvalidRecordCase(
        "numeric country", .attribute, attributesObject(["country": 840]), field: "country", rule: "(got number)"),
    InvalidRecordCase(
        "uppercase language", .attribute, attributesObject(["language": "EN"]), field: "language",
        rule: "must be an ISO 639-1 language code in lowercase, such as en, or null (got \"EN\")"),
    InvalidRecordCase(
        "language ISO 639-2", .attribute, attributesObject(["language": "eng"]), field: "language",
        rule: "(got \"eng\")"),
    InvalidRecordCase(
        "language with region", .attribute, attributesObject(["language": "en-US"]), field: "language",
        rule: "(got \"en-US\")"),
    InvalidRecordCase(
        "unassigned language", .attribute, attributesObject(["language": "xx"]), field: "language", rule: "(got \"xx\")"
    ),
    InvalidRecordCase(
        "deprecated language iw", .attribute, attributesObject(["language": "iw"]), field: "language",
        rule: "(got \"iw\")"),
    InvalidRecordCase(
        "time_zone starting lowercase", .attribute, attributesObject(["time_zone": "america/New_York"]),
        field: "time_zone", rule: "must be an IANA time zone name such as America/New_York or UTC, or null"),
    InvalidRecordCase(
        "time_zone with an empty segment", .attribute, attributesObject(["time_zone": "America//New_York"]),
        field: "time_zone", rule: "(got \"America//New_York\")"),
    InvalidRecordCase(
        "time_zone with a space", .attribute, attributesObject(["time_zone": "America/New York"]), field: "time_zone",
        rule: "IANA time zone name"),
    InvalidRecordCase(
        "time_zone with a leading slash", .attribute, attributesObject(["time_zone": "/UTC"]), field: "time_zone",
        rule: "IANA time zone name"),
    InvalidRecordCase(
        "time_zone with a trailing slash", .attribute, attributesObject(["time_zone": "Europe/"]), field: "time_zone",
        rule: "IANA time zone name"),
    InvalidRecordCase(
        "time_zone as an offset", .attribute, attributesObject(["time_zone": "+02:00"]), field: "time_zone",
        rule: "IANA time zone name"),
    InvalidRecordCase(
        "empty time_zone", .attribute, attributesObject(["time_zone": ""]), field: "time_zone", rule: "(got \"\")"),
    InvalidRecordCase(
        "time_zone of 65 characters", .attribute, attributesObject(["time_zone": .string("A" + repeated(64, "b"))]),
        field: "time_zone", rule: "IANA time zone name"),
    InvalidRecordCase(
        "numeric time_zone", .attribute, attributesObject(["time_zone": -5]), field: "time_zone", rule: "(got number)"),
    InvalidRecordCase(
        "email_subscribe yes", .attribute, attributesObject(["email_subscribe": "yes"]), field: "email_subscribe",
        rule: "must be one of opted_in, subscribed, unsubscribed or null (got \"yes\")"),
    InvalidRecordCase(
        "push_subscribe in uppercase", .attribute, attributesObject(["push_subscribe": "OPTED_IN"]),
        field: "push_subscribe", rule: "(got \"OPTED_IN\")"),
    InvalidRecordCase(
        "push_subscribe as a boolean", .attribute, attributesObject(["push_subscribe": true]), field: "push_subscribe",
        rule: "(got boolean)"),
]

/// Custom attributes, operations and nested objects.
private let customAttributeCases: [InvalidRecordCase] = [
    InvalidRecordCase(
        "attribute name starting with $", .attribute, attributesObject(["$plan": "pro"]), field: "$plan",
        rule: "is not a valid attribute name: it must not start with $"),
    InvalidRecordCase(
        "attribute name of 256 characters", .attribute,
        .init(members: [.init(key: "external_id", value: "u1"), .init(key: repeated(256, "k"), value: 1)]),
        field: repeated(256, "k"), rule: "is not a valid attribute name: it must be 1 to 255 characters (got 256)"),
    InvalidRecordCase(
        "empty attribute name", .attribute, attributesObject(["": 1]), field: "record",
        rule: "must not have an empty key"),
    InvalidRecordCase(
        "string of 256 characters", .attribute, attributesObject(["motto": .string(repeated(256))]), field: "motto",
        rule: "must be at most 255 characters (got 256)"),
    InvalidRecordCase(
        "string of 256 scalars in 128 characters", .attribute, attributesObject(["motto": .string(combining256)]),
        field: "motto", rule: "(got 256)"),
    InvalidRecordCase(
        "array with a number", .attribute, attributesObject(["favorite_colors": ["red", "blue", "green", 4]]),
        field: "favorite_colors[3]", rule: "must be a string (got number)"),
    InvalidRecordCase(
        "array with an object", .attribute, attributesObject(["favorite_colors": [["name": "red"]]]),
        field: "favorite_colors[0]", rule: "must be a string (got object)"),
    InvalidRecordCase(
        "array with null", .attribute, attributesObject(["favorite_colors": ["red", nil]]), field: "favorite_colors[1]",
        rule: "must be a string (got null)"),
    InvalidRecordCase(
        "array with a string of 256 characters", .attribute,
        attributesObject(["favorite_colors": ["red", .string(repeated(256))]]), field: "favorite_colors[1]",
        rule: "must be at most 255 characters (got 256)"),
    InvalidRecordCase(
        "array of 501 items", .attribute, attributesObject(["favorite_colors": stringArray(501)]),
        field: "favorite_colors",
        rule: "must have at most 500 items (got 501)"),
    InvalidRecordCase(
        "inc of a string", .attribute, attributesObject(["visits": ["inc": "1"]]), field: "visits.inc",
        rule: "must be a number (got string)"),
    InvalidRecordCase(
        "inc with another key", .attribute, attributesObject(["visits": ["inc": 1, "note": "x"]]), field: "visits",
        rule: "mixes the inc operation with other keys (note)"),
    InvalidRecordCase(
        "add with remove", .attribute, attributesObject(["tags": ["add": ["a"], "remove": ["b"]]]), field: "tags",
        rule: "mixes the add operation with other keys (remove); an operation object has exactly one key"),
    InvalidRecordCase(
        "operation key after other keys", .attribute, attributesObject(["tags": ["x": 1, "y": 2, "remove": ["b"]]]),
        field: "tags", rule: "mixes the remove operation with other keys (x and y)"),
    InvalidRecordCase(
        "add of a string", .attribute, attributesObject(["tags": ["add": "a"]]), field: "tags.add",
        rule: "must be an array of strings (got string)"),
    InvalidRecordCase(
        "add with a number", .attribute, attributesObject(["tags": ["add": ["a", 2]]]), field: "tags.add[1]",
        rule: "must be a string (got number)"),
    InvalidRecordCase(
        "add of 501 items", .attribute, attributesObject(["tags": ["add": stringArray(501)]]), field: "tags.add",
        rule: "must have at most 500 items (got 501)"),
    InvalidRecordCase(
        "remove of 501 items", .attribute, attributesObject(["tags": ["remove": stringArray(501)]]),
        field: "tags.remove",
        rule: "(got 501)"),
    InvalidRecordCase(
        "remove with a string of 256 characters", .attribute,
        attributesObject(["tags": ["remove": ["a", "b", .string(repeated(256))]]]), field: "tags.remove[2]",
        rule: "(got 256)"),
    InvalidRecordCase(
        "remove of null", .attribute, attributesObject(["tags": ["remove": nil]]), field: "tags.remove",
        rule: "must be an array of strings (got null)"),
    InvalidRecordCase(
        "nested key starting with $", .attribute, attributesObject(["address": ["$street": "x"]]),
        field: "address.$street", rule: "it must not start with $"),
    InvalidRecordCase(
        "empty nested key", .attribute, attributesObject(["address": ["geo": ["": 1]]]), field: "address.geo",
        rule: "must not have an empty key"),
    InvalidRecordCase(
        "nested key of 256 characters", .attribute,
        attributesObject(["address": .object(JSONObject(members: [.init(key: repeated(256), value: 1)]))]),
        field: "address." + repeated(256), rule: "(got 256)"),
    InvalidRecordCase(
        "nested string of 256 characters", .attribute,
        attributesObject(["address": ["street": .string(repeated(256))]]),
        field: "address.street", rule: "must be at most 255 characters (got 256)"),
    InvalidRecordCase(
        "string deep in a nested object", .attribute,
        attributesObject(["address": ["lines": ["a", ["label": .string(repeated(300))]]]]),
        field: "address.lines[1].label",
        rule: "(got 300)"),
    InvalidRecordCase(
        "nested object of 100001 bytes", .attribute,
        attributesObject(["profile": .object(objectSerializing(to: 100_001))]), field: "profile",
        rule: "must serialize to at most 100000 bytes (got 100001)"),
]

// MARK: - Tests

@Suite("RecordValidator")
struct RecordValidatorTests {
    @Test("valid records pass and name their user", arguments: validEvents + validPurchases + validAttributes)
    func valid(_ testCase: ValidRecordCase) throws {
        let user = try RecordValidator.validate(kind: testCase.kind, object: testCase.object)
        #expect(user == testCase.user)
    }

    @Test("identity of events and purchases", arguments: identityCases)
    func identity(_ testCase: InvalidRecordCase) {
        expectInvalid(testCase)
    }

    @Test("identity of attributes objects", arguments: attributeIdentityCases)
    func attributeIdentity(_ testCase: InvalidRecordCase) {
        expectInvalid(testCase)
    }

    @Test("event fields", arguments: eventCases)
    func eventFields(_ testCase: InvalidRecordCase) {
        expectInvalid(testCase)
    }

    @Test("purchase fields", arguments: purchaseCases)
    func purchaseFields(_ testCase: InvalidRecordCase) {
        expectInvalid(testCase)
    }

    @Test("properties", arguments: propertiesCases)
    func properties(_ testCase: InvalidRecordCase) {
        expectInvalid(testCase)
    }

    @Test("standard profile fields", arguments: profileFieldCases)
    func profileFields(_ testCase: InvalidRecordCase) {
        expectInvalid(testCase)
    }

    @Test("custom attributes", arguments: customAttributeCases)
    func customAttributes(_ testCase: InvalidRecordCase) {
        expectInvalid(testCase)
    }

    @Test("the size helper builds exactly the size asked for", arguments: [2, 13, 267, 278, 50_000, 50_001, 100_001])
    func sizeHelper(_ bytes: Int) {
        #expect(JSONValue.object(objectSerializing(to: bytes)).serialized.utf8.count == bytes)
    }

    @Test("the user is checked first, then members in order, then required fields")
    func order() {
        expectInvalid(
            InvalidRecordCase("no user and no name", .event, ["properties": ["$x": 1]], field: "record", rule: "user"))
        expectInvalid(
            InvalidRecordCase(
                "bad time before bad name", .event, ["external_id": "u1", "time": "x", "name": ""], field: "time",
                rule: "ISO 8601"))
        expectInvalid(
            InvalidRecordCase(
                "bad property before missing name", .event, ["external_id": "u1", "properties": ["$x": 1]],
                field: "properties.$x", rule: "$"))
        expectInvalid(
            InvalidRecordCase(
                "bad attribute before no attributes", .attribute, ["email": "a@b.co", "_merge_objects": 1],
                field: "_merge_objects", rule: "boolean"))
    }

    @Test("the error carries no batch position and describes itself")
    func errorShape() {
        do throws(ValidationError) {
            _ = try RecordValidator.validate(kind: .event, object: eventObject(["name": ""]))
            Issue.record("expected an error")
        } catch {
            #expect(error.index == nil)
            #expect(error.line == nil)
            #expect(error.description == "invalid record: name must be 1 to 255 characters (got 0)")
        }
    }

    @Test("records built with the factory methods pass")
    func factories() throws {
        let user = UserIdentity.alias(name: "n", label: "l")
        let records = [
            Record.event("played", user: user, properties: ["song": "x"], time: "2024-05-01T12:00:00Z"),
            Record.attributes(["first_name": "A", "country": "FR"], user: user),
            Record.attribute("visits", ["inc": 1], user: user),
            Record.purchase(productID: "sku", currency: "EUR", price: JSONNumber(5), user: user),
        ]
        for record in records {
            #expect(try RecordValidator.validate(kind: record.kind, object: record.object) == user)
        }
    }

    @Test("long offending values are shortened in the rule")
    func longValuesAreShortened() {
        expectInvalid(
            InvalidRecordCase(
                "long time", .event, eventObject(["time": .string(repeated(100, "x"))]), field: "time",
                rule: "(got \"\(repeated(40, "x"))…\" (100 characters))"))
    }

    @Test("ISO code lists are complete")
    func codeLists() {
        #expect(ISOCodes.countries.count == 249)
        #expect(ISOCodes.languages.count == 184)
        #expect(ISOCodes.currencies.count == 178)
        for code in ["US", "GB", "DE", "FR", "JP", "CN", "IN", "BR", "AQ", "BQ", "CW", "SX", "SS", "XK"] {
            #expect(ISOCodes.countries.contains(code) == (code != "XK"), "\(code)")
        }
        for code in ["USD", "EUR", "GBP", "JPY", "CHF", "CNY", "INR", "BRL", "XCG", "ZWG", "VES", "VED", "SLE"] {
            #expect(ISOCodes.currencies.contains(code), "\(code)")
        }
        for code in ["HRK", "ZWL", "SLL", "CUC", "ANG", "VEF", "MRO", "STD", "LTL", "LVL", "EEK", "BYR"] {
            #expect(!ISOCodes.currencies.contains(code), "\(code)")
        }
        for set in [ISOCodes.countries, ISOCodes.currencies] {
            #expect(set.allSatisfy { $0.utf8.allSatisfy { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") } })
        }
        #expect(
            ISOCodes.languages.allSatisfy { $0.utf8.allSatisfy { $0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z") } })
        #expect(ISOCodes.countries.allSatisfy { $0.utf8.count == 2 })
        #expect(ISOCodes.languages.allSatisfy { $0.utf8.count == 2 })
        #expect(ISOCodes.currencies.allSatisfy { $0.utf8.count == 3 })
    }
}

/// Validates `testCase` and expects it to fail on its field, with its rule text in the rule.
private func expectInvalid(_ testCase: InvalidRecordCase, sourceLocation: SourceLocation = #_sourceLocation) {
    do throws(ValidationError) {
        let user = try RecordValidator.validate(kind: testCase.kind, object: testCase.object)
        Issue.record(
            "\(testCase.name): expected \(testCase.field) to fail, but it passed as \(user)",
            sourceLocation: sourceLocation)
    } catch {
        #expect(error.field == testCase.field, "\(testCase.name): \(error)", sourceLocation: sourceLocation)
        #expect(
            error.rule.contains(testCase.rule), "\(testCase.name): rule was \"\(error.rule)\"",
            sourceLocation: sourceLocation)
    }
}
