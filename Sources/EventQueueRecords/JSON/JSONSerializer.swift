extension JSONValue {
    /// The value as compact JSON text, members in stored order: a parsed compact document comes back byte for
    /// byte, so what a writer enqueued is what a sink receives.
    public var serialized: String {
        var writer = JSONWriter()
        writer.write(self)
        return writer.makeString()
    }

    /// Appends the compact JSON text of this value to `buffer` as UTF-8 (one reused buffer for a batch).
    public func serialize(into buffer: inout [UInt8]) {
        var writer = JSONWriter()
        writer.write(self)
        writer.append(to: &buffer)
    }

    /// Appends `string` as a quoted JSON string (see `JSONWriter.writeQuoted`).
    static func appendQuoted(_ string: String, to buffer: inout [UInt8]) {
        var writer = JSONWriter()
        writer.writeQuoted(string)
        writer.append(to: &buffer)
    }
}

extension JSONObject {
    /// The object as compact JSON text, members in stored order (see `JSONValue.serialized`).
    public var serialized: String { JSONValue.object(self).serialized }

    /// Appends the object's compact JSON text to `buffer` as UTF-8 (see `JSONValue.serialize(into:)`).
    public func serialize(into buffer: inout [UInt8]) { JSONValue.object(self).serialize(into: &buffer) }
}

/// A growable byte buffer written through a raw pointer: appending tiny pieces straight into an `[UInt8]` pays a
/// uniqueness and capacity check each; the finished bytes are copied out once.
struct JSONWriter: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private var count = 0
    private var capacity = 256

    init() {
        base = .allocate(capacity: capacity)
    }

    deinit {
        base.deallocate()
    }

    /// Appends the written bytes to `buffer`.
    func append(to buffer: inout [UInt8]) {
        buffer.append(contentsOf: UnsafeBufferPointer(start: base, count: count))
    }

    func makeString() -> String {
        String(decoding: UnsafeBufferPointer(start: base, count: count), as: UTF8.self)
    }

    // MARK: Values

    mutating func write(_ value: JSONValue) {
        switch value {
        case .null:
            writeStatic("null")
        case .bool(let flag):
            writeStatic(flag ? "true" : "false")
        case .number(let number):
            Self.withUTF8(of: number.text) { writeBytes($0) }  // number text needs no escaping
        case .string(let string):
            writeQuoted(string)
        case .array(let elements):
            writeByte(UInt8(ascii: "["))
            // Indexing the buffer borrows each element instead of copying (retaining) it.
            elements.withUnsafeBufferPointer { elements in
                for index in elements.indices {
                    if index > 0 { writeByte(UInt8(ascii: ",")) }
                    write(elements[index])
                }
            }
            writeByte(UInt8(ascii: "]"))
        case .object(let object):
            write(object)
        }
    }

    mutating func write(_ object: JSONObject) {
        writeByte(UInt8(ascii: "{"))
        object.members.withUnsafeBufferPointer { members in
            for index in members.indices {
                if index > 0 { writeByte(UInt8(ascii: ",")) }
                writeQuoted(members[index].key)
                writeByte(UInt8(ascii: ":"))
                write(members[index].value)
            }
        }
        writeByte(UInt8(ascii: "}"))
    }

    /// Writes `string` quoted. Only `"`, `\` and control characters are escaped; everything else (including
    /// `/`, U+2028/U+2029 and all non-ASCII text) is copied as raw UTF-8, in bulk runs.
    mutating func writeQuoted(_ string: String) {
        Self.withUTF8(of: string) { writeQuoted(utf8: $0) }
    }

    /// `string`'s UTF-8 in place, or a copy's when it is not contiguous (a bridged string).
    @inline(__always)
    private static func withUTF8(of string: String, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        if string.utf8.withContiguousStorageIfAvailable(body) == nil {
            var copy = string
            copy.withUTF8(body)
        }
    }

    private mutating func writeQuoted(utf8: UnsafeBufferPointer<UInt8>) {
        reserve(utf8.count + 2)
        writeByte(UInt8(ascii: "\""))
        var runStart = 0
        var position = Self.firstByteNeedingEscape(in: utf8, from: 0)
        while position < utf8.count {
            writeBytes(UnsafeBufferPointer(rebasing: utf8[runStart..<position]))
            writeEscape(for: utf8[position])
            runStart = position + 1
            position = Self.firstByteNeedingEscape(in: utf8, from: runStart)
        }
        writeBytes(UnsafeBufferPointer(rebasing: utf8[runStart..<utf8.count]))
        writeByte(UInt8(ascii: "\""))
    }

    /// The offset of the first byte at or after `start` that must be escaped, or `utf8.count`; checks eight
    /// bytes at a time, since nearly all strings need no escaping at all.
    @inline(__always)
    private static func firstByteNeedingEscape(in utf8: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        guard let base = utf8.baseAddress else { return start }
        var position = start
        let count = utf8.count
        while count - position >= 8 {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + position).loadUnaligned(as: UInt64.self))
            let flags = escapeFlags(word)
            if flags != 0 { return position + flags.trailingZeroBitCount >> 3 }
            position += 8
        }
        guard position < count else { return count }
        if count >= 8 {
            // The last eight bytes, minus the ones already checked (replaced by "x", which needs no escaping).
            let checked = 8 - (count - position)
            let word = UInt64(littleEndian: UnsafeRawPointer(base + count - 8).loadUnaligned(as: UInt64.self))
            let tail = word >> UInt64(8 * checked) | 0x7878_7878_7878_7878 << UInt64(64 - 8 * checked)
            let flags = escapeFlags(tail)
            return flags == 0 ? count : position + flags.trailingZeroBitCount >> 3
        }
        while position < count {
            let byte = utf8[position]
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return position }
            position += 1
        }
        return count
    }

    /// Sets the high bit of each byte of `word` (bytes in memory order, lowest address least significant) that
    /// is below 0x20, `"` or `\`. Exact for the lowest flagged byte (the classic "has zero byte" tests), which
    /// is all a scan needs (this one and `JSONParser`'s).
    @inline(__always)
    static func escapeFlags(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quotes = word ^ (ones &* 0x22)
        let backslashes = word ^ (ones &* 0x5C)
        let below = (word &- ones &* 0x20) & ~word
        let quote = (quotes &- ones) & ~quotes
        let backslash = (backslashes &- ones) & ~backslashes
        return (below | quote | backslash) & (ones &* 0x80)
    }

    private mutating func writeEscape(for byte: UInt8) {
        reserve(6)
        base[count] = UInt8(ascii: "\\")
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): base[count + 1] = byte
        case 0x08: base[count + 1] = UInt8(ascii: "b")
        case 0x0C: base[count + 1] = UInt8(ascii: "f")
        case 0x0A: base[count + 1] = UInt8(ascii: "n")
        case 0x0D: base[count + 1] = UInt8(ascii: "r")
        case 0x09: base[count + 1] = UInt8(ascii: "t")
        default:
            // Only control characters get here, so the first two hex digits are always "00".
            let low = byte & 0x0F
            base[count + 1] = UInt8(ascii: "u")
            base[count + 2] = UInt8(ascii: "0")
            base[count + 3] = UInt8(ascii: "0")
            base[count + 4] = UInt8(ascii: "0") + (byte >> 4)
            base[count + 5] = low < 10 ? UInt8(ascii: "0") + low : UInt8(ascii: "a") + low - 10
            count += 6
            return
        }
        count += 2
    }

    // MARK: Bytes

    @inline(__always)
    private mutating func reserve(_ extra: Int) {
        if capacity - count < extra { grow(minimum: count + extra) }
    }

    private mutating func grow(minimum: Int) {
        var newCapacity = capacity * 2
        while newCapacity < minimum { newCapacity *= 2 }
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.initialize(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    @inline(__always)
    private mutating func writeByte(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    private mutating func writeBytes(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        reserve(bytes.count)
        (base + count).initialize(from: source, count: bytes.count)
        count += bytes.count
    }

    private mutating func writeStatic(_ text: StaticString) {
        text.withUTF8Buffer { writeBytes($0) }
    }
}
