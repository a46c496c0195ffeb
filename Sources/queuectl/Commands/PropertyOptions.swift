import ArgumentParser
import EventQueue

/// `--prop KEY=VALUE`, `--properties JSON`, `--time`, `--key`: what events and purchases share.
struct PropertyOptions: ParsableArguments {
    @Option(name: .customLong("prop"), help: "A property KEY=VALUE; VALUE is JSON when it parses, else a string.")
    var props: [String] = []
    @Option(help: "All properties as one JSON object (--prop entries are added on top).")
    var properties: String?
    @Option(help: "When it happened, ISO 8601 (default: now).")
    var time: String?
    @Option(name: .customLong("key"), parsing: .singleValue, help: idempotencyKeyHelp)
    var idempotencyKeys: [String] = []

    /// The one `--key`, if given (a second is refused: `singleValue`).
    var idempotencyKey: String? { get throws { try singleValue(idempotencyKeys, flag: "--key") } }

    func object() throws -> JSONObject {
        var object = JSONObject()
        if let properties {
            let parsed: JSONValue
            do {
                parsed = try JSONValue.parse(properties)
            } catch {
                throw ValidationError("--properties must be a JSON object: \(error)")
            }
            guard let parsedObject = parsed.objectValue else {
                throw ValidationError("--properties must be a JSON object")
            }
            object = parsedObject
        }
        var seen: Set<String> = []
        for prop in props {
            guard let equals = prop.firstIndex(of: "="), equals != prop.startIndex else {
                throw ValidationError("--prop must be KEY=VALUE (got \"\(prop)\")")
            }
            let key = String(prop[..<equals])
            guard seen.insert(key).inserted else {
                throw ValidationError("--prop \(key) is given more than once: give each property once")
            }
            object[key] = CommandLineValue.parse(String(prop[prop.index(after: equals)...]))
        }
        return object
    }
}
