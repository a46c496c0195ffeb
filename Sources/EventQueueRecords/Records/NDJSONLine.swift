/// How NDJSON input is cut into records (`queuectl enqueue --ndjson`, the fuzz target's oracle). Lines end
/// at `\n` (a `\r` before it is dropped; the last needs none). A blank line is skipped but counted, so line
/// numbers are an editor's. A line must be UTF-8.
package enum NDJSONLine: Sendable, Hashable {
    /// Empty, or only spaces and tabs: skipped.
    case blank
    /// The line's text, without its line ending: what `Record(jsonLine:)` parses.
    case text(String)
    /// Not valid UTF-8: refused with `NDJSONLine.invalidUTF8Message`. Carries the line's bytes (without its
    /// line ending).
    case invalidUTF8([UInt8])

    /// The newline byte lines end at.
    package static let newline = UInt8(ascii: "\n")

    /// What a writer is told about a line that is not UTF-8 (after `line N: `).
    package static let invalidUTF8Message = "invalid record: record is not valid UTF-8"

    /// One line, given its bytes without the `\n` (a trailing `\r` is dropped here).
    package init(bytes line: some BidirectionalCollection<UInt8>) {
        var content = line[...]
        if content.last == UInt8(ascii: "\r") { content = content.dropLast() }
        if content.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) {
            self = .blank
        } else if let text = String(validating: content, as: UTF8.self) {
            self = .text(text)
        } else {
            self = .invalidUTF8(Array(content))
        }
    }
}
