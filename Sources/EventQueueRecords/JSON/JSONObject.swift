/// A JSON object whose members keep the order they were written in.
///
/// What a writer enqueued is what the sink receives, byte for byte. Lookups are linear: fastest for small objects.
public struct JSONObject: Sendable, Hashable, Sequence {
    /// One `key: value` pair, in the order it was written.
    public struct Member: Sendable, Hashable {
        /// The member's name.
        public var key: String
        /// The member's value.
        public var value: JSONValue

        /// A member; an object built from members needs distinct keys (`JSONObject.init(members:)`).
        public init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// The members in written order; read-only, so keys stay distinct (set them through the subscript).
    public private(set) var members: [Member]

    /// An empty object, `{}`.
    public init() {
        members = []
    }

    /// Creates an object from members that the caller guarantees have distinct keys.
    public init(members: [Member]) {
        self.members = members
    }

    /// How many members the object has.
    public var count: Int { members.count }
    /// True for `{}`.
    public var isEmpty: Bool { members.isEmpty }
    /// The member names, in written order.
    public var keys: [String] { members.map(\.key) }

    /// Reads a member, or sets one: setting an existing key replaces its value in place, a new key is
    /// appended, and `nil` removes the member.
    public subscript(key: String) -> JSONValue? {
        get {
            for member in members where member.key == key { return member.value }
            return nil
        }
        set {
            if let index = members.firstIndex(where: { $0.key == key }) {
                if let newValue {
                    members[index].value = newValue
                } else {
                    members.remove(at: index)
                }
            } else if let newValue {
                members.append(Member(key: key, value: newValue))
            }
        }
    }

    /// Whether a member is named `key` (its value may be `null`).
    public func contains(key: String) -> Bool {
        members.contains { $0.key == key }
    }

    /// The members in written order.
    public func makeIterator() -> IndexingIterator<[Member]> {
        members.makeIterator()
    }
}
