import Testing

@testable import EventQueueRecords

/// Issue 32 #6: "the same record" was compared byte for byte, so a retry under the same key with its members in
/// another order, or `1.0` for `1`, was refused as a different record (exit 65). The digest is now taken over the
/// record's canonical form (`CanonicalJSON`); the digest 1.2.0 and 1.3.0 stored is still accepted.
@Suite struct RecordDigestTests {
    func object(_ json: String) throws -> JSONObject {
        guard let object = try JSONValue.parse(json).objectValue else { throw ScratchError(message: "not an object") }
        return object
    }

    func digest(_ json: String, kind: RecordKind = .event) throws -> Int64 {
        IdempotencyKey.digest(kind: kind, object: try object(json))
    }

    /// FNV-1a 64 of kind, NUL and bytes, written out here so that the test does not trust the code under test.
    func fnv(_ kind: String, _ text: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in Array(kind.utf8) + [0] + Array(text.utf8) {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }

    @Test func reorderedMembersAreTheSameRecord() throws {
        let first = try digest(#"{"external_id":"u1","name":"song_liked","properties":{"song":"x","n":2}}"#)
        #expect(try digest(#"{"name":"song_liked","properties":{"n":2,"song":"x"},"external_id":"u1"}"#) == first)
        #expect(
            try digest(
                #" { "properties" : { "song" : "x" , "n" : 2 } , "external_id" : "u1" , "name" : "song_liked" } "#)
                == first)
    }

    @Test func nestedObjectsAreReorderedAtEveryDepthButArraysKeepTheirOrder() throws {
        let first = try digest(#"{"external_id":"u1","name":"a","properties":{"l":[{"b":1,"a":{"d":1,"c":2}},3]}}"#)
        #expect(
            try digest(#"{"external_id":"u1","name":"a","properties":{"l":[{"a":{"c":2,"d":1},"b":1},3]}}"#) == first)
        #expect(
            try digest(#"{"external_id":"u1","name":"a","properties":{"l":[3,{"b":1,"a":{"d":1,"c":2}}]}}"#) != first)
    }

    @Test func numbersAreComparedByTheirValue() throws {
        let one = try digest(#"{"external_id":"u1","name":"a","properties":{"n":1}}"#)
        for spelling in ["1.0", "1e0", "10E-1", "0.1e1", "1.000", "100e-2", "1E+0", "0.0000001e7"] {
            #expect(
                try digest(#"{"external_id":"u1","name":"a","properties":{"n":\#(spelling)}}"#) == one, "\(spelling)")
        }
        for other in ["2", "-1", "1.5", "11", "0.1", "\"1\""] {
            #expect(try digest(#"{"external_id":"u1","name":"a","properties":{"n":\#(other)}}"#) != one, "\(other)")
        }
        let table: [(String, String)] = [
            ("0", "0"), ("-0", "0"), ("0.000e5", "0"), ("-0.0e-3", "0"), ("150", "15e1"), ("-0.5", "-5e-1"),
            ("1.5E3", "15e2"), ("12345678901234567890", "1234567890123456789e1"), ("0.25", "25e-2"),
            ("1e-0005", "1e-5"), ("0e99999999999999999999", "0"),
        ]
        for (text, canonical) in table {
            #expect(CanonicalJSON.canonicalNumber(text) == canonical, "\(text)")
        }
        // Exact: two integers a Double cannot tell apart are different records.
        #expect(
            try digest(#"{"external_id":"u1","name":"a","properties":{"n":9007199254740993}}"#)
                != digest(#"{"external_id":"u1","name":"a","properties":{"n":9007199254740992}}"#))
    }

    @Test func escapedStringsAreTheSameRecord() throws {
        let plain = try digest(#"{"external_id":"u1","name":"A/é","properties":{"s":"line\nbreak"}}"#)
        #expect(
            try digest(#"{"external_id":"u1","name":"\u0041\/\u00e9","properties":{"s":"line\u000abreak"}}"#) == plain)
        #expect(
            try digest(#"{"external_id":"u1","name":"\u0041\/\u00E9","properties":{"\u0073":"line\nbreak"}}"#) == plain)
    }

    @Test func aDifferentValueOrKindIsADifferentRecord() throws {
        let first = try digest(#"{"external_id":"u1","name":"a","properties":{"n":1}}"#)
        #expect(try digest(#"{"external_id":"u1","name":"b","properties":{"n":1}}"#) != first)
        #expect(try digest(#"{"external_id":"u1","name":"a","properties":{"n":1,"m":null}}"#) != first)
        #expect(try digest(#"{"external_id":"u1","name":"a","properties":{"n":true}}"#) != first)
        #expect(try digest(#"{"external_id":"u1","name":"a","properties":{"n":1}}"#, kind: .purchase) != first)
    }

    /// The canonical digest is FNV-1a 64 of the documented form (docs/SCHEMA.md), and the legacy one of the
    /// compact JSON as given; for a record already in canonical form the two agree.
    @Test func theDigestsAreTheDocumentedOnes() throws {
        let given = #"{"name":"a","external_id":"u1","properties":{"n":1.50,"s":"\u0041"}}"#
        let record = try object(given)
        #expect(
            IdempotencyKey.digest(kind: .event, object: record)
                == fnv("event", #"{"external_id":"u1","name":"a","properties":{"n":15e-1,"s":"A"}}"#))
        #expect(
            IdempotencyKey.legacyDigest(kind: .event, object: record)
                == fnv("event", #"{"name":"a","external_id":"u1","properties":{"n":1.50,"s":"A"}}"#))
        let canonical = try object(#"{"external_id":"u1","name":"a","properties":{"n":15e-1}}"#)
        #expect(
            IdempotencyKey.digest(kind: .event, object: canonical)
                == IdempotencyKey.legacyDigest(kind: .event, object: canonical))
    }

    /// A stored digest is the same record when it is this record's canonical digest (this release) or its legacy
    /// one (1.2.0 and 1.3.0); no digest is the same record too; anything else is another record.
    @Test func aStoredDigestIsTheSameRecordWhenEitherDigestMatches() throws {
        let retry = try #require(
            IdempotencyKey.scope(
                of: Record(kind: .event, object: try object(#"{"name":"a","external_id":"u1"}"#), idempotencyKey: "k")))
        let oldWriter = fnv("event", #"{"name":"a","external_id":"u1"}"#)
        let newWriter = fnv("event", #"{"external_id":"u1","name":"a"}"#)
        #expect(retry.digest == newWriter && retry.legacyDigest == oldWriter)
        #expect(IdempotencyKey.isSameRecord(storedDigest: oldWriter, as: retry))
        #expect(IdempotencyKey.isSameRecord(storedDigest: newWriter, as: retry))
        #expect(IdempotencyKey.isSameRecord(storedDigest: nil, as: retry))
        #expect(
            !IdempotencyKey.isSameRecord(storedDigest: fnv("event", #"{"name":"b","external_id":"u1"}"#), as: retry))
    }
}
