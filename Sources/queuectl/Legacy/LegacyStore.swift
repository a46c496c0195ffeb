import EventQueue
import Foundation

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
    /// The top level, for a property list (values as Foundation gives them) or for JSON.
    private let plistTop: [String: Any]?
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
        let data = Data(bytes)
        let firstByte = bytes.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 && $0 != 0xEF })
        if bytes.starts(with: Array("bplist".utf8)) || firstByte == UInt8(ascii: "<") {
            var found = PropertyListSerialization.PropertyListFormat.xml
            let value: Any
            do {
                value = try PropertyListSerialization.propertyList(from: data, options: [], format: &found)
            } catch {
                throw fail(
                    "\(path) is not a readable property list (\(error.localizedDescription)); nothing was imported",
                    status: ExitStatus.invalidInput)
            }
            guard let top = Self.dictionary(value) else {
                throw fail(
                    "\(path): the top level must be a dictionary (found \(type(of: value))); nothing was imported",
                    status: ExitStatus.invalidInput)
            }
            format = found == .binary ? .binary : .xml
            plistTop = top
            jsonTop = nil
        } else if firstByte == UInt8(ascii: "{") {
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw fail("\(path) is not valid UTF-8 JSON; nothing was imported", status: ExitStatus.invalidInput)
            }
            let value: JSONValue
            do {
                value = try JSONValue.parse(text)
            } catch {
                throw fail(
                    "\(path) is not valid JSON (\(error)); nothing was imported", status: ExitStatus.invalidInput)
            }
            guard let top = value.objectValue else {
                throw fail(
                    "\(path): the top level must be an object; nothing was imported", status: ExitStatus.invalidInput)
            }
            format = .json
            plistTop = nil
            jsonTop = top
        } else {
            throw fail(
                "\(path) is neither a property list (XML or binary) nor JSON; nothing was imported",
                status: ExitStatus.invalidInput)
        }
        for section in Self.sections {
            if let present = topValue(section), !Self.isArray(present) {
                throw fail(
                    "\(path): \(section) must be an array; nothing was imported", status: ExitStatus.invalidInput)
            }
        }
    }

    /// The top-level keys, sorted.
    var keys: [String] {
        if let plistTop { return plistTop.keys.sorted() }
        return jsonTop?.keys.sorted() ?? []
    }

    /// The generation stored by earlier clears (0 when none).
    var generation: Int {
        if let plistTop, let value = plistTop[Self.generationKey], type(of: value) != Bool.self,
            let number = value as? NSNumber
        {
            return number.intValue
        }
        if let value = jsonTop?[Self.generationKey]?.numberValue?.integerValue { return Int(value) }
        return 0
    }

    /// The items of one of the three arrays (empty when the key is absent).
    func items(_ section: String) -> [Item] {
        if let plistTop {
            guard let array = plistTop[section] as? [Any] else { return [] }
            return array.enumerated().map { index, element in
                if let data = element as? Data { return .data([UInt8](data)) }
                var binary: [String] = []
                let value = Self.json(fromPlist: element, path: "\(section)[\(index)]", binary: &binary)
                return .value(value, binaryPaths: binary)
            }
        }
        guard case .array(let array) = jsonTop?[section] else { return [] }
        return array.map { .value($0, binaryPaths: []) }
    }

    private func topValue(_ key: String) -> Any? {
        if let plistTop { return plistTop[key] }
        return jsonTop?[key]
    }

    private static func isArray(_ value: Any) -> Bool {
        if value is [Any] { return true }
        if let json = value as? JSONValue, case .array = json { return true }
        return false
    }

    // MARK: - Rewriting

    /// The store's bytes without the entries in `removed` (indices per section), with the generation counter
    /// raised, in the format it was read in. Every other key and value is kept as read.
    func rewritten(removing removed: [String: Set<Int>]) throws -> [UInt8] {
        if var top = plistTop {
            for (section, indices) in removed {
                guard let array = top[section] as? [Any] else { continue }
                top[section] = array.enumerated().filter { !indices.contains($0.offset) }.map(\.element)
            }
            top[Self.generationKey] = NSNumber(value: generation + 1)
            let data = try PropertyListSerialization.data(
                fromPropertyList: top, format: format == .binary ? .binary : .xml, options: 0)
            return [UInt8](data)
        }
        guard var top = jsonTop else { return bytes }
        for (section, indices) in removed {
            guard case .array(let array) = top[section] else { continue }
            top[section] = .array(array.enumerated().filter { !indices.contains($0.offset) }.map(\.element))
        }
        top[Self.generationKey] = .number(JSONNumber(generation + 1))
        return Array((top.serialized + "\n").utf8)
    }

    // MARK: - Reading

    static func readFile(_ path: String) throws -> ([UInt8], Identity, stat) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw fail(
                "cannot read the store \(path): \(String(cString: strerror(errno)))", status: ExitStatus.inputMissing)
        }
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
            guard count >= 0 else {
                throw fail(
                    "cannot read the store \(path): \(String(cString: strerror(errno)))",
                    status: ExitStatus.inputMissing)
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        let identity = Identity(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
            modifiedSeconds: info.st_mtim.tv_sec, modifiedNanoseconds: info.st_mtim.tv_nsec)
        return (bytes, identity, info)
    }

    /// A property-list dictionary as `[String: Any]` (Foundation may give `[AnyHashable: Any]` for nested ones).
    static func dictionary(_ value: Any) -> [String: Any]? {
        if let dictionary = value as? [String: Any] { return dictionary }
        guard let hashable = value as? [AnyHashable: Any] else { return nil }
        var result: [String: Any] = [:]
        for (key, element) in hashable {
            guard let key = key.base as? String else { return nil }
            result[key] = element
        }
        return result
    }

    /// A property-list value as JSON: dictionaries with sorted keys, dates as ISO 8601 text, binary data as
    /// base64 text (its path recorded in `binary`).
    static func json(fromPlist value: Any, path: String, binary: inout [String]) -> JSONValue {
        if type(of: value) == Bool.self, let flag = value as? Bool { return .bool(flag) }
        if let string = value as? String { return .string(string) }
        if let number = value as? NSNumber {
            let code = String(cString: number.objCType)
            if code == "d" || code == "f" {
                return JSONNumber(number.doubleValue).map(JSONValue.number) ?? .null
            }
            return .number(JSONNumber(number.int64Value))
        }
        if let date = value as? Date {
            let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
            return .string(ISO8601.format(unixMilliseconds: milliseconds))
        }
        if let data = value as? Data {
            binary.append(path)
            return .string(data.base64EncodedString())
        }
        if let array = value as? [Any] {
            return .array(array.enumerated().map { json(fromPlist: $1, path: "\(path)[\($0)]", binary: &binary) })
        }
        if let dictionary = dictionary(value) {
            var object = JSONObject()
            for key in dictionary.keys.sorted() {
                if let element = dictionary[key] {
                    object[key] = json(fromPlist: element, path: "\(path).\(key)", binary: &binary)
                }
            }
            return .object(object)
        }
        return .string(String(describing: value))
    }
}
