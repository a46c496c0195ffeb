/// Reads one HTTP/1.1 response from bytes as they arrive: the head, then the body whole (`Content-Length`),
/// chunked (`Transfer-Encoding: chunked`, what the daemon streams `POST /launch?wait=true` progress in), or up to
/// the end of the connection: just what `queuectl drain` needs (`UnixHTTPClient` says why not a library).
public struct HTTPResponseParser: Sendable {
    public struct Head: Sendable {
        public var status: Int
        /// Names lowercased, in the order received.
        public var headers: [(name: String, value: String)]

        public func value(_ name: String) -> String? {
            headers.first { $0.name == name }?.value
        }
    }

    /// What a fed run of bytes completed.
    public enum Event: Sendable {
        case head(Head)
        case body([UInt8])
        case end
    }

    /// Not an HTTP/1.1 response the parser understands; the message says what.
    public struct Malformed: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    private enum State: Sendable {
        case head
        /// A body of known length (`Content-Length`), or a chunk's data (then its CRLF and the next size line).
        case data(remaining: Int, chunked: Bool)
        case untilClose
        case chunkSize
        case chunkDataEnd
        case trailer
        case done
    }

    private var state = State.head
    private var buffer: [UInt8] = []
    /// The longest head or chunk-size line accepted: a peer that never ends one cannot grow memory.
    private static let longestLine = 64 * 1024

    public init() {}

    /// True once the whole response was read.
    public var isComplete: Bool { if case .done = state { true } else { false } }

    /// Feeds the next bytes; returns what they completed, in order.
    public mutating func feed(_ bytes: some Collection<UInt8>) throws(Malformed) -> [Event] {
        buffer.append(contentsOf: bytes)
        var events: [Event] = []
        while true {
            switch state {
            case .head:
                guard let end = Self.find([13, 10, 13, 10], in: buffer) else {
                    if buffer.count > Self.longestLine { throw Malformed(description: "the response head is too long") }
                    return events
                }
                let head = try Self.parseHead(Array(buffer[..<end]))
                buffer.removeFirst(end + 4)
                events.append(.head(head))
                if head.value("transfer-encoding")?.lowercased().contains("chunked") == true {
                    state = .chunkSize
                } else if let text = head.value("content-length") {
                    guard let length = Int(text), length >= 0 else {
                        throw Malformed(description: "Content-Length \"\(text)\" is not a number")
                    }
                    state = .data(remaining: length, chunked: false)
                } else if head.status == 204 || head.status == 304 || (100..<200).contains(head.status) {
                    state = .data(remaining: 0, chunked: false)
                } else {
                    state = .untilClose
                }
            case .data(remaining: 0, chunked: true):
                state = .chunkDataEnd
            case .data(remaining: 0, chunked: false):
                state = .done
                events.append(.end)
                return events
            case .data(let remaining, let chunked):
                guard !buffer.isEmpty else { return events }
                let count = min(remaining, buffer.count)
                events.append(.body(Array(buffer[..<count])))
                buffer.removeFirst(count)
                state = .data(remaining: remaining - count, chunked: chunked)
            case .untilClose:
                if !buffer.isEmpty { events.append(.body(buffer)) }
                buffer.removeAll()
                return events
            case .chunkSize:
                guard let end = Self.find([13, 10], in: buffer) else {
                    if buffer.count > Self.longestLine { throw Malformed(description: "a chunk size line is too long") }
                    return events
                }
                let line = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 2)
                // Chunk extensions (";name=value") are allowed and ignored.
                let digits = (line.split(separator: ";", maxSplits: 1).first.map(String.init) ?? "").trimmingSpaces()
                // Hex digits only: `Int(_:radix:)` alone would also take a sign ("+1a").
                guard digits.allSatisfy(\.isHexDigit), let size = Int(digits, radix: 16) else {
                    throw Malformed(description: "a chunk size \"\(line)\" is not hexadecimal")
                }
                state = size == 0 ? .trailer : .data(remaining: size, chunked: true)
            case .chunkDataEnd:
                guard buffer.count >= 2 else { return events }
                guard buffer[0] == 13, buffer[1] == 10 else {
                    throw Malformed(description: "a chunk is longer than its size says")
                }
                buffer.removeFirst(2)
                state = .chunkSize
            case .trailer:
                // Trailer fields, then an empty line.
                guard let end = Self.find([13, 10], in: buffer) else { return events }
                buffer.removeFirst(end + 2)
                if end == 0 {
                    state = .done
                    events.append(.end)
                    return events
                }
            case .done:
                buffer.removeAll()
                return events
            }
        }
    }

    /// The connection closed: completes a response read up to the close, else says what was cut short.
    public mutating func finish() throws(Malformed) -> [Event] {
        switch state {
        case .done: return []
        case .untilClose:
            state = .done
            return [.end]
        case .head: throw Malformed(description: "the connection closed before a response")
        default: throw Malformed(description: "the connection closed in the middle of the response")
        }
    }

    private static func parseHead(_ bytes: [UInt8]) throws(Malformed) -> Head {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        guard let statusLine = lines.first else { throw Malformed(description: "the response is empty") }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]),
            (100...999).contains(status)
        else {
            throw Malformed(description: "not an HTTP/1.1 status line: \"\(statusLine.prefix(80))\"")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else {
                throw Malformed(description: "a header line without a colon: \"\(line.prefix(80))\"")
            }
            headers.append(
                (String(line[..<colon]).lowercased(), String(line[line.index(after: colon)...]).trimmingSpaces()))
        }
        return Head(status: status, headers: headers)
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count)
        where haystack[start] == needle[0] && haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces, tabs, carriage returns and newlines (Foundation's
    /// `trimmingCharacters(in: .whitespacesAndNewlines)` for the ASCII ones, without loading Foundation).
    public func trimmingSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
