/// Room for 256 supplementary groups as `SO_PEERGROUPS` writes them. The kernel keeps a credential's groups
/// sorted and NIO zeroes the buffer, so the list is the non-zero entries (membership of gid 0 by a
/// supplementary group is not honoured; root's uid is).
struct PeerGroupBuffer: Sendable {
    var storage = InlineArray<256, UInt32>(repeating: 0)

    var groups: [UInt32] {
        var result: [UInt32] = []
        for index in storage.indices where storage[index] != 0 { result.append(storage[index]) }
        return result
    }
}
