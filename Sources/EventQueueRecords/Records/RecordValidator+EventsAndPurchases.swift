extension RecordValidator {
    /// An event or a purchase: one walk over the members, one switch. The members both take (`time`,
    /// `properties`, `app_id`, `_update_existing_only`) are checked alike; `name` belongs to events only,
    /// `product_id`, `currency`, `price` and `quantity` to purchases only.
    static func validateEventOrPurchase(kind: RecordKind, _ object: JSONObject) throws(ValidationError)
        -> UserIdentity
    {
        let user = try soleUser(of: object)
        let isPurchase = kind == .purchase
        var hasName = false
        var hasProduct = false
        var hasCurrency = false
        var hasPrice = false
        for member in object.members {
            switch Key(member.key) {
            case .externalID, .brazeID, .userAlias, .email, .phone:
                continue
            case .time:
                try checkTime(member.value)
            case .properties:
                try checkProperties(member.value)
            case .appID:
                try checkString(member.value, field: "app_id", allowEmpty: false)
            case .updateExistingOnly:
                try checkBoolean(member.value, field: member.key)
            case .name where !isPurchase:
                try checkString(member.value, field: "name", allowEmpty: false)
                hasName = true
            case .productID where isPurchase:
                try checkString(member.value, field: "product_id", allowEmpty: false)
                hasProduct = true
            case .currency where isPurchase:
                try checkCurrency(member.value)
                hasCurrency = true
            case .price where isPurchase:
                guard case .number = member.value else {
                    throw ValidationError(field: "price", rule: "must be a number (got \(member.value.typeName))")
                }
                hasPrice = true
            case .quantity where isPurchase:
                try checkQuantity(member.value)
            default:
                throw notAField(member.key, of: isPurchase ? "a Braze purchase object" : "a Braze event object")
            }
        }
        if isPurchase {
            guard hasProduct else { throw ValidationError(field: "product_id", rule: "is required") }
            guard hasCurrency else { throw ValidationError(field: "currency", rule: "is required") }
            guard hasPrice else { throw ValidationError(field: "price", rule: "is required") }
        } else {
            guard hasName else { throw ValidationError(field: "name", rule: "is required") }
        }
        return user
    }

    static func checkTime(_ value: JSONValue) throws(ValidationError) {
        guard case .string(let text) = value else {
            throw ValidationError(field: "time", rule: "must be an ISO 8601 timestamp string (got \(value.typeName))")
        }
        guard ISO8601.parse(text) != nil else {
            throw ValidationError(
                field: "time", rule: "must be an ISO 8601 timestamp such as 2024-05-01T12:00:00Z (got \(quoted(text)))")
        }
    }

    static func checkCurrency(_ value: JSONValue) throws(ValidationError) {
        try checkFormatted(
            "currency", value, rule: "must be an active ISO 4217 currency code in uppercase, such as USD",
            nullable: false
        ) { $0.utf8.count == 3 && ISOCodes.currencies.contains($0) }
    }

    static func checkQuantity(_ value: JSONValue) throws(ValidationError) {
        let rule = "must be an integer from 1 to 100"
        guard case .number(let number) = value else {
            throw ValidationError(field: "quantity", rule: "\(rule) (got \(value.typeName))")
        }
        guard let quantity = number.integerValue, (1...100).contains(quantity) else {
            throw ValidationError(field: "quantity", rule: "\(rule) (got \(number.text))")
        }
    }
}
