import EventQueueDelivery
import EventQueueTestSupport
import Foundation
import Testing

@testable import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// The control client over a real Unix socket: the request it sends, a streamed answer written in small pieces,
/// and the failures `queuectl drain` tells apart.
@Suite struct UnixHTTPClientTests {
    /// Listens on `path`, answers one connection with `pieces` (written one by one), then closes; hands back the
    /// request it read.
    final class OneShotServer: @unchecked Sendable {
        let listener: Int32
        private let done = DispatchSemaphore(value: 0)
        private(set) var request = ""

        init(path: String, pieces: [String]) throws {
            listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            let address = try UnixSocketAddress(path: path)
            guard address.withSocketAddress({ bind(listener, $0, $1) }) == 0, listen(listener, 1) == 0 else {
                throw ScratchError(message: "cannot listen on \(path): \(String(cString: strerror(errno)))")
            }
            let thread = Thread { [self] in
                defer { done.signal() }
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }
                defer { close(connection) }
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while !received.suffix(4).elementsEqual(Array("\r\n\r\n".utf8)) {
                    let count = read(connection, &buffer, buffer.count)
                    guard count > 0 else { break }
                    received += buffer[..<count]
                }
                request = String(decoding: received, as: UTF8.self)
                for piece in pieces {
                    _ = Array(piece.utf8).withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
                    usleep(1_000)  // separate writes, so the client reads the stream in pieces
                }
            }
            thread.start()
        }

        func finish() -> String {
            done.wait()
            close(listener)
            return request
        }
    }

    @Test func aStreamedAnswerArrivesLineByLineAndTheRequestIsAPost() throws {
        let scratch = Scratch()
        let path = scratch.file("control.sock")
        let server = try OneShotServer(
            path: path,
            pieces: [
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n", "Connection: close\r\n\r\n",
                "6\r\nline1\n\r\n", "6\r\nli", "ne2\n\r\n", "0\r\n\r\n",
            ])
        var status = 0
        var body: [UInt8] = []
        try UnixHTTPClient(socketPath: path).exchange(
            method: "POST", target: "/launch?wait=true", timeoutSeconds: 10, onHead: { status = $0.status },
            onBody: { body += $0 })
        let request = server.finish()
        #expect(status == 200)
        #expect(String(decoding: body, as: UTF8.self) == "line1\nline2\n")
        #expect(request.hasPrefix("POST /launch?wait=true HTTP/1.1\r\n"))
        #expect(request.contains("\r\nContent-Length: 0\r\n"))
    }

    @Test func anAnswerCutShortIsATransferFailure() throws {
        let scratch = Scratch()
        let path = scratch.file("control.sock")
        let server = try OneShotServer(
            path: path, pieces: ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "6\r\nline1\n\r\n"])
        var lines = 0
        #expect {
            try UnixHTTPClient(socketPath: path).exchange(
                method: "POST", target: "/launch?wait=true", timeoutSeconds: 10, onHead: { _ in },
                onBody: { _ in lines += 1 })
        } throws: { error in
            guard case UnixHTTPClient.Failure.transfer = error else { return false }
            return true
        }
        _ = server.finish()
        #expect(lines == 1)
    }

    @Test func nothingListeningIsACannotConnectWithTheErrno() {
        let scratch = Scratch()
        #expect {
            try UnixHTTPClient(socketPath: scratch.file("none.sock")).exchange(
                method: "POST", target: "/launch", timeoutSeconds: 1, onHead: { _ in }, onBody: { _ in })
        } throws: { error in
            guard case UnixHTTPClient.Failure.cannotConnect(let failure) = error else { return false }
            return failure.code == ENOENT
        }
    }
}
