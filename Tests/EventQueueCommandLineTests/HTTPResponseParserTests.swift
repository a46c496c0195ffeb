import Testing

@testable import EventQueueCommandLine

/// The control client's response reader: whole, chunked (the daemon's streamed progress) and close-delimited
/// bodies, however the bytes are split on the way.
@Suite struct HTTPResponseParserTests {
    /// Feeds `response` in pieces of `size` bytes; returns the head, the body and whether the end was seen.
    static func read(_ response: String, pieces size: Int, close: Bool = false) throws -> (
        head: HTTPResponseParser.Head?, body: String, ended: Bool
    ) {
        var parser = HTTPResponseParser()
        let bytes = Array(response.utf8)
        var events: [HTTPResponseParser.Event] = []
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + size, bytes.count)
            events += try parser.feed(bytes[offset..<end])
            offset = end
        }
        if close { events += try parser.finish() }
        var head: HTTPResponseParser.Head?
        var body: [UInt8] = []
        var ended = false
        for event in events {
            switch event {
            case .head(let received): head = received
            case .body(let bytes): body += bytes
            case .end: ended = true
            }
        }
        return (head, String(decoding: body, as: UTF8.self), ended)
    }

    static let chunked =
        "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        + "1b\r\n{\"event\":\"progress\",\"n\":1}\n\r\n" + "1A;ext=1\r\n{\"event\":\"summary\",\"n\":2}\n\r\n"
        + "0\r\n\r\n"

    @Test(arguments: [1, 2, 3, 7, 64, 4096])
    func aChunkedStreamIsReassembledWhateverTheSplit(pieces: Int) throws {
        let (head, body, ended) = try Self.read(Self.chunked, pieces: pieces)
        #expect(head?.status == 200)
        #expect(head?.value("transfer-encoding") == "chunked")
        #expect(body == "{\"event\":\"progress\",\"n\":1}\n{\"event\":\"summary\",\"n\":2}\n")
        #expect(ended)
    }

    @Test(arguments: [1, 5, 4096])
    func aContentLengthBodyEndsAtItsLength(pieces: Int) throws {
        let response = "HTTP/1.1 202 Accepted\r\nContent-Length: 18\r\n\r\n{\"accepted\":true}\nEXTRA"
        let (head, body, ended) = try Self.read(response, pieces: pieces)
        #expect(head?.status == 202)
        #expect(body == "{\"accepted\":true}\n")
        #expect(ended)
    }

    @Test func aBodyWithoutLengthEndsWithTheConnection() throws {
        let response = "HTTP/1.1 403 Forbidden\r\n\r\n{\"message\":\"no\"}"
        let open = try Self.read(response, pieces: 3)
        #expect(open.head?.status == 403)
        #expect(!open.ended)
        let closed = try Self.read(response, pieces: 3, close: true)
        #expect(closed.body == "{\"message\":\"no\"}")
        #expect(closed.ended)
    }

    @Test func aStreamCutShortIsAnError() throws {
        var parser = HTTPResponseParser()
        let cut = String(Self.chunked.prefix(Self.chunked.utf8.count - 12))
        _ = try parser.feed(Array(cut.utf8))
        #expect(!parser.isComplete)
        #expect(throws: HTTPResponseParser.Malformed.self) { try parser.finish() }
    }

    @Test(arguments: [
        "SSH-2.0-OpenSSH\r\n\r\n", "HTTP/1.1 abc OK\r\n\r\n", "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+2\r\nab\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-0\r\n\r\n",
    ])
    func whatIsNotAResponseIsRefused(response: String) {
        var parser = HTTPResponseParser()
        #expect(throws: HTTPResponseParser.Malformed.self) { try parser.feed(Array(response.utf8)) }
    }

    @Test func spacesAreTrimmedWithoutFoundation() {
        #expect(" \t a b \r\n".trimmingSpaces() == "a b")
        #expect(" \n ".trimmingSpaces() == "")
    }
}
