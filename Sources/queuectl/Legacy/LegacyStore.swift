import EventQueue
import EventQueueDelivery
import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// The old shared-defaults store (a property list, XML or binary, or JSON of the same shape), as read once.
///
/// It keeps the exact bytes and file identity it was read from, so that `--clear-source` can tell whether an old
/// writer changed the store since (the recipe's writers read, modify and rewrite the whole file), and the parsed
/// top level as it was, so that a rewrite keeps every key and value it does not remove, in the same format.
struct LegacyStore {
    enum Format: String {
        case xml = "XML property list"
        case binary = "binary property list"
        case json = "JSON"
    }

    /// What identifies one version of the file: a rewrite by an old writer changes at least one of these, and
    /// the bytes are compared too.
    struct Identity: Equatable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modifiedSeconds: Int
        var modifiedNanoseconds: Int
    }

    /// An entry of one of the three arrays, as found.
    enum Item {
        /// A dictionary or other value. `binaryPaths` names the places where binary data was found (kept as
        /// base64 text in `value`): Braze cannot take binary data.
        case value(JSONValue, binaryPaths: [String])
        /// A `Data` item: what `pending_user_attributes` holds.
        case data([UInt8])
    }

    /// The key that counts how many times `--clear-source` rewrote the store: part of every idempotency key, so
    /// an entry written after a clear, at a position and with content that an earlier, cleared entry had, is
    /// still a new entry.
    static let generationKey = "eventqueue_import_generation"
    static let sections = ["pending_custom_events", "pending_custom_attributes", "pending_user_attributes"]

    let path: String
    let bytes: [UInt8]
    let identity: Identity
    let mode: mode_t
    let owner: (uid: uid_t, gid: gid_t)
    let format: Format
    /// The top level, for a property list or for JSON.
    private let plistTop: [String: PropertyListValue]?
    private let jsonTop: JSONObject?

    /// Reads and parses the store. Throws `ExitCode` with a one-line message: 66 when it cannot be read, 65 when
    /// it is not a store of this shape.
    init(path: String) throws {
        self.path = path
        let (bytes, identity, info) = try Self.readFile(path)
        self.bytes = bytes
        self.identity = identity
        mode = info.st_mode & 0o7777
        owner = (info.st_uid, info.st_gid)
        /// A store not of this shape: 65, nothing imported.
        func refused(_ problem: String) -> any Error {
            fail("\(path)\(problem); nothing was imported", status: ExitStatus.invalidInput)
        }
        let firstByte = bytes.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 && $0 != 0xEF })
        if bytes.starts(with: Array("bplist".utf8)) || firstByte == UInt8(ascii: "<") {
            let parsed: (value: PropertyListValue, binary: Bool)
            do {
                parsed = try PropertyListValue.parse(bytes)
            } catch {
                throw refused(" is not a readable property list (\(error))")
            }
            guard case .dictionary(let top) = parsed.value else {
                throw refused(": the top level must be a dictionary (found \(parsed.value.typeName))")
            }
            format = parsed.binary ? .binary : .xml
            plistTop = top
            jsonTop = nil
        } else if firstByte == UInt8(ascii: "{") {
            guard let text = String(validating: bytes, as: UTF8.self) else { throw refused(" is not valid UTF-8 JSON") }
            let value: JSONValue
            do {
                value = try JSONValue.parse(text)
            } catch {
                throw refused(" is not valid JSON (\(error))")
            }
            guard let top = value.objectValue else { throw refused(": the top level must be an object") }
            format = .json
            plistTop = nil
            jsonTop = top
        } else {
            throw refused(" is neither a property list (XML or binary) nor JSON")
        }
        for section in Self.sections where topValueIsArray(section) == false {
            throw refused(": \(section) must be an array")
        }
    }

    var keys: [String] {
        if let plistTop { return plistTop.keys.sorted() }
        return jsonTop?.keys.sorted() ?? []
    }

    /// The generation stored by earlier clears (0 when none).
    var generation: Int {
        switch plistTop?[Self.generationKey] {
        case .integer(let number)?: return Int(clamping: number)
        case .real(let number)? where number.isFinite && abs(number) < 9e15: return Int(number)
        default: break
        }
        if let value = jsonTop?[Self.generationKey]?.numberValue?.integerValue { return Int(value) }
        return 0
    }

    /// The items of one of the three arrays (empty when the key is absent).
    func items(_ section: String) -> [Item] {
        if let plistTop {
            guard case .array(let array)? = plistTop[section] else { return [] }
            return array.enumerated().map { index, element in
                if case .data(let bytes) = element { return .data(bytes) }
                var binary: [String] = []
                let value = element.json(path: "\(section)[\(index)]", binary: &binary)
                return .value(value, binaryPaths: binary)
            }
        }
        guard case .array(let array) = jsonTop?[section] else { return [] }
        return array.map { .value($0, binaryPaths: []) }
    }

    /// Whether the top level has `key`, and if so whether its value is an array.
    private func topValueIsArray(_ key: String) -> Bool? {
        if let plistTop { return plistTop[key].map { if case .array = $0 { true } else { false } } }
        return jsonTop?[key].map { if case .array = $0 { true } else { false } }
    }

    /// The store's bytes without the entries in `removed` (indices per section), with the generation counter
    /// raised, in the format it was read in. Every other key and value is kept as read.
    func rewritten(removing removed: [String: Set<Int>]) throws -> [UInt8] {
        if var top = plistTop {
            for (section, indices) in removed {
                guard case .array(let array)? = top[section] else { continue }
                top[section] = .array(array.enumerated().filter { !indices.contains($0.offset) }.map(\.element))
            }
            top[Self.generationKey] = .integer(Int64(generation) + 1)
            return try PropertyListValue.dictionary(top).serialized(binary: format == .binary)
        }
        guard var top = jsonTop else { return bytes }
        for (section, indices) in removed {
            guard case .array(let array) = top[section] else { continue }
            top[section] = .array(array.enumerated().filter { !indices.contains($0.offset) }.map(\.element))
        }
        top[Self.generationKey] = .number(JSONNumber(generation + 1))
        return Array((top.serialized + "\n").utf8)
    }

    static func readFile(_ path: String) throws -> ([UInt8], Identity, stat) {
        func cannotRead() -> any Error {
            fail("cannot read the store \(path): \(String(cString: strerror(errno)))", status: ExitStatus.inputMissing)
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw cannotRead() }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw fail("the store \(path) is not a regular file", status: ExitStatus.inputMissing)
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw cannotRead() }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        let identity = Identity(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
            modifiedSeconds: info.st_mtim.tv_sec, modifiedNanoseconds: info.st_mtim.tv_nsec)
        return (bytes, identity, info)
    }
}
