/// The query of `POST /launch`, parsed rather than searched for (`?nowait=true` and `?wait=10` used to count
/// as `?wait=true`, issue 13 item 13).
///
/// `wait` is the only parameter: `true`/`1` streams the pass (progress and summary), `false`/`0` or no `wait`
/// answers 202 at once. Any other value, another parameter, or `wait` given twice is refused with 400, so a
/// mistyped request never does something other than what was asked.
enum LaunchQuery: Equatable {
    case accept
    case wait

    struct Invalid: Error, Equatable {
        var message: String
    }

    static func parse(_ query: String) throws(Invalid) -> LaunchQuery {
        var wait: Bool?
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            let value = parts.count > 1 ? String(parts[1]) : nil
            guard name == "wait" else {
                throw Invalid(
                    message: "unknown parameter \"\(escapedPrefix(name))\": POST /launch takes only wait=true|false")
            }
            guard wait == nil else { throw Invalid(message: "wait given twice") }
            switch value {
            case "true", "1": wait = true
            case "false", "0": wait = false
            default:
                throw Invalid(
                    message:
                        "wait=\(escapedPrefix(value ?? "")) is not valid: use wait=true (or 1) or wait=false (or 0)")
            }
        }
        return wait == true ? .wait : .accept
    }

    private static func escapedPrefix(_ text: String) -> String {
        String(text.prefix(64).map { $0.isASCII && ($0.isLetter || $0.isNumber || "_-.%".contains($0)) ? $0 : "?" })
    }
}
