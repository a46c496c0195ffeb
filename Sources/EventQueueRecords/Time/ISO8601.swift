/// ISO 8601 timestamps as the queue stores them (Unix milliseconds) and as Braze reads and writes them.
///
/// By hand, without Foundation, so the core library stays cheap to load. Parsing accepts the shapes Braze accepts,
/// so a timestamp that passes at enqueue is one the sink can deliver.
public enum ISO8601 {
    private static let millisecondsPerDay: Int64 = 86_400_000

    /// Formats a Unix time as `2026-11-22T04:17:10.123Z`: always UTC and always three fraction digits.
    ///
    /// One fixed shape keeps timestamps sortable as text. Years outside 0000–9999 get as many digits as needed
    /// (and a `-` when negative); `parse` does not accept them.
    public static func format(unixMilliseconds: Int64) -> String {
        var (days, millisecondOfDay) = unixMilliseconds.quotientAndRemainder(dividingBy: millisecondsPerDay)
        if millisecondOfDay < 0 { (days, millisecondOfDay) = (days - 1, millisecondOfDay + millisecondsPerDay) }
        let (year, month, day) = civil(fromDays: days)
        // At most 1 sign + 19 year digits + 20 = 40 bytes.
        return String(unsafeUninitializedCapacity: 40) { buffer in
            var position = 0
            func put(_ byte: UInt8) {
                buffer[position] = byte
                position += 1
            }
            func put(_ value: UInt64, digits: Int) {
                var remaining = value
                for offset in stride(from: digits - 1, through: 0, by: -1) {
                    buffer[position + offset] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: remaining % 10)
                    remaining /= 10
                }
                position += digits
            }
            if year < 0 { put(UInt8(ascii: "-")) }
            var (yearDigits, bound): (Int, UInt64) = (4, 10_000)
            while yearDigits < 19 && year.magnitude >= bound {
                yearDigits += 1
                bound *= 10
            }
            put(year.magnitude, digits: yearDigits)
            put(UInt8(ascii: "-"))
            put(UInt64(month), digits: 2)
            put(UInt8(ascii: "-"))
            put(UInt64(day), digits: 2)
            put(UInt8(ascii: "T"))
            let time = UInt64(millisecondOfDay)
            put(time / 3_600_000, digits: 2)
            put(UInt8(ascii: ":"))
            put(time / 60_000 % 60, digits: 2)
            put(UInt8(ascii: ":"))
            put(time / 1000 % 60, digits: 2)
            put(UInt8(ascii: "."))
            put(time % 1000, digits: 3)
            put(UInt8(ascii: "Z"))
            return position
        }
    }

    /// Parses a timestamp to Unix milliseconds, or returns `nil` when it is not a valid one.
    ///
    /// Accepted, because these are the shapes Braze accepts:
    /// - `YYYY-MM-DDTHH:MM:SS`, with `T`, `t` or a space between date and time;
    /// - an optional fraction of 1 to 9 digits (truncated to milliseconds), or Braze's `:SSS` form
    ///   (`2026-11-22T04:17:10:123Z`, exactly three digits after a colon);
    /// - then `Z`, `z`, `±HH:MM`, `±HHMM`, or nothing (read as UTC, as Braze does).
    ///
    /// Every field is range-checked, not normalized: February 30 is a writer's bug to surface at enqueue. A leap
    /// second (`:60`) is read as `:59`.
    public static func parse(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { parse(bytes: $0) }
    }

    /// Checks a calendar date in the exact form `YYYY-MM-DD` (years 0001–9999).
    ///
    /// Braze's `dob`: an impossible date (`2023-02-29`) is an error here, not an attribute Braze drops.
    public static func isValidDate(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var reader = DigitReader(bytes: bytes)
            return reader.date() != nil && reader.isAtEnd
        }
    }

    // MARK: Parsing

    private static func parse(bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        var reader = DigitReader(bytes: bytes)
        guard let (year, month, day) = reader.date() else { return nil }
        guard let separator = reader.next(),
            separator == UInt8(ascii: "T") || separator == UInt8(ascii: "t") || separator == UInt8(ascii: " "),
            let hour = reader.number(digits: 2), hour <= 23, reader.skip(UInt8(ascii: ":")),
            let minute = reader.number(digits: 2), minute <= 59, reader.skip(UInt8(ascii: ":")),
            let rawSecond = reader.number(digits: 2), rawSecond <= 60
        else { return nil }
        let second = min(rawSecond, 59)

        var millisecond: Int64 = 0
        if reader.skip(UInt8(ascii: ".")) {
            var digits = 0
            while let digit = reader.digit() {
                digits += 1
                guard digits <= 9 else { return nil }
                if digits <= 3 { millisecond = millisecond * 10 + digit }
            }
            guard digits > 0 else { return nil }
            for _ in 0..<max(0, 3 - digits) { millisecond *= 10 }
        } else if reader.skip(UInt8(ascii: ":")) {
            guard let value = reader.number(digits: 3) else { return nil }
            millisecond = value
        }

        var offsetMinutes: Int64 = 0
        if let zone = reader.next() {
            switch zone {
            case UInt8(ascii: "Z"), UInt8(ascii: "z"):
                break
            case UInt8(ascii: "+"), UInt8(ascii: "-"):
                guard let offsetHour = reader.number(digits: 2), offsetHour <= 23 else { return nil }
                _ = reader.skip(UInt8(ascii: ":"))
                guard let offsetMinute = reader.number(digits: 2), offsetMinute <= 59 else { return nil }
                offsetMinutes = offsetHour * 60 + offsetMinute
                if zone == UInt8(ascii: "-") { offsetMinutes = -offsetMinutes }
            default:
                return nil
            }
        }
        guard reader.isAtEnd else { return nil }

        let days = days(fromCivilYear: year, month: month, day: day)
        let secondOfDay = (hour * 60 + minute) * 60 + second
        return days * millisecondsPerDay + secondOfDay * 1000 + millisecond - offsetMinutes * 60_000
    }

    /// Reads fixed-width ASCII fields from UTF-8 bytes.
    private struct DigitReader {
        let bytes: UnsafeBufferPointer<UInt8>
        var position = 0

        var isAtEnd: Bool { position == bytes.count }

        mutating func next() -> UInt8? {
            guard position < bytes.count else { return nil }
            defer { position += 1 }
            return bytes[position]
        }

        mutating func skip(_ byte: UInt8) -> Bool {
            guard position < bytes.count, bytes[position] == byte else { return false }
            position += 1
            return true
        }

        mutating func digit() -> Int64? {
            guard position < bytes.count else { return nil }
            let value = bytes[position] &- UInt8(ascii: "0")
            guard value < 10 else { return nil }
            position += 1
            return Int64(value)
        }

        /// Exactly `digits` decimal digits.
        mutating func number(digits: Int) -> Int64? {
            var value: Int64 = 0
            for _ in 0..<digits {
                guard let digit = digit() else { return nil }
                value = value * 10 + digit
            }
            return value
        }

        /// `YYYY-MM-DD`, range-checked.
        mutating func date() -> (year: Int64, month: Int64, day: Int64)? {
            guard let year = number(digits: 4), year >= 1, skip(UInt8(ascii: "-")),
                let month = number(digits: 2), (1...12).contains(month), skip(UInt8(ascii: "-")),
                let day = number(digits: 2), day >= 1, day <= ISO8601.daysIn(month: month, year: year)
            else { return nil }
            return (year, month, day)
        }
    }

    // MARK: Calendar math (proleptic Gregorian, Howard Hinnant's days-from-civil algorithms)

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 for a proleptic Gregorian date.
    static func days(fromCivilYear year: Int64, month: Int64, day: Int64) -> Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date `days` after 1970-01-01.
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
