extension RecordValidator {
    /// A member name the rules know, recognized by its length and first byte, then one comparison (this runs on
    /// every key of every record).
    enum Key: Equatable {
        case externalID, brazeID, userAlias, email, phone, aliasName, aliasLabel
        case name, time, properties, appID, updateExistingOnly, mergeObjects
        case productID, currency, price, quantity
        case firstName, lastName, homeCity, gender, dob, country, language, timeZone, emailSubscribe, pushSubscribe
        case inc, add, remove
        case other

        init(_ key: String) {
            let utf8 = key.utf8
            guard let first = utf8.first else {
                self = .other
                return
            }
            let known: (Key, String)
            switch (utf8.count, first) {
            case (3, UInt8(ascii: "a")): known = (.add, "add")
            case (3, UInt8(ascii: "d")): known = (.dob, "dob")
            case (3, UInt8(ascii: "i")): known = (.inc, "inc")
            case (4, UInt8(ascii: "n")): known = (.name, "name")
            case (4, UInt8(ascii: "t")): known = (.time, "time")
            case (5, UInt8(ascii: "e")): known = (.email, "email")
            case (5, UInt8(ascii: "p")): known = key == "phone" ? (.phone, "phone") : (.price, "price")
            case (6, UInt8(ascii: "a")): known = (.appID, "app_id")
            case (6, UInt8(ascii: "g")): known = (.gender, "gender")
            case (6, UInt8(ascii: "r")): known = (.remove, "remove")
            case (7, UInt8(ascii: "c")): known = (.country, "country")
            case (8, UInt8(ascii: "b")): known = (.brazeID, "braze_id")
            case (8, UInt8(ascii: "c")): known = (.currency, "currency")
            case (8, UInt8(ascii: "l")): known = (.language, "language")
            case (8, UInt8(ascii: "q")): known = (.quantity, "quantity")
            case (9, UInt8(ascii: "h")): known = (.homeCity, "home_city")
            case (9, UInt8(ascii: "l")): known = (.lastName, "last_name")
            case (9, UInt8(ascii: "t")): known = (.timeZone, "time_zone")
            case (10, UInt8(ascii: "a")): known = (.aliasName, "alias_name")
            case (10, UInt8(ascii: "f")): known = (.firstName, "first_name")
            case (10, UInt8(ascii: "p")):
                known = utf8.last == UInt8(ascii: "s") ? (.properties, "properties") : (.productID, "product_id")
            case (10, UInt8(ascii: "u")): known = (.userAlias, "user_alias")
            case (11, UInt8(ascii: "a")): known = (.aliasLabel, "alias_label")
            case (11, UInt8(ascii: "e")): known = (.externalID, "external_id")
            case (14, UInt8(ascii: "_")): known = (.mergeObjects, "_merge_objects")
            case (14, UInt8(ascii: "p")): known = (.pushSubscribe, "push_subscribe")
            case (15, UInt8(ascii: "e")): known = (.emailSubscribe, "email_subscribe")
            case (21, UInt8(ascii: "_")): known = (.updateExistingOnly, "_update_existing_only")
            default:
                self = .other
                return
            }
            self = key == known.1 ? known.0 : .other
        }

        /// One of the five ways to name a user.
        var isIdentifier: Bool {
            switch self {
            case .externalID, .brazeID, .userAlias, .email, .phone: return true
            default: return false
            }
        }

        /// An identifier that names the user even in an attributes object, where email and phone may be values.
        var namesUserAlone: Bool {
            self == .externalID || self == .brazeID || self == .userAlias
        }

        /// `inc`, `add` or `remove`: the key of an operation object.
        var isOperation: Bool {
            self == .inc || self == .add || self == .remove
        }
    }
}
