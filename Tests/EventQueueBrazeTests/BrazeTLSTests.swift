import EventQueue
import EventQueueDelivery
import EventQueueTestSupport
import Foundation
import Logging
import Testing

@testable import EventQueueBraze

/// A Braze endpoint whose certificate cannot be verified (issue 22, "HTTPS on a minimal host"): without
/// `ca-certificates` every request failed verification, each try used an attempt, and after `--max-attempts` every
/// record was dead. It is a configuration problem: the pass halts, the records are kept, the reason says what to
/// install or check.
@Suite(.serialized) struct BrazeTLSTests {
    /// An HTTPS server on loopback with a fresh self-signed certificate (so no trust store can verify it), run by
    /// Python's `ssl` module; its port is written to a file once it listens. It serves until `stop()`.
    final class UntrustedServer {
        let child: ChildProcess
        let port: Int

        init(in scratch: Scratch) async throws {
            let (cert, key, portFile) = (scratch.file("cert.pem"), scratch.file("key.pem"), scratch.file("port"))
            let made = try await run(
                "/usr/bin/openssl",
                [
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                ], in: scratch)
            guard made.status == 0 else { throw ScratchError(message: "openssl: \(made.stderr)") }
            let script = """
                import http.server, ssl, sys
                cert, key, port_file = sys.argv[1:4]
                server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                context.load_cert_chain(cert, key)
                server.socket = context.wrap_socket(server.socket, server_side=True)
                with open(port_file + ".tmp", "w") as f: f.write(str(server.server_address[1]))
                import os; os.rename(port_file + ".tmp", port_file)
                server.serve_forever()
                """
            let child = try ChildProcess(
                "/usr/bin/python3", ["-c", script, cert, key, portFile], logDirectory: scratch.path)
            self.child = child
            let port = await Wait.value(timeout: .seconds(30), every: .milliseconds(10)) { () -> Int? in
                if child.hasExited { return -1 }
                return (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { Int($0) }
            }
            guard let port, port > 0 else {
                throw ScratchError(message: "the TLS server did not start: \(child.standardError)")
            }
            self.port = port
        }

        func stop() {
            child.signal(SIGKILL)
        }
    }

    @Test func anUnverifiableCertificateHaltsThePassAndKeepsTheRecords() async throws {
        let scratch = Scratch()
        let server = try await UntrustedServer(in: scratch)
        defer { server.stop() }
        let sink = BrazeSink(
            baseURL: "https://127.0.0.1:\(server.port)", apiKey: try BrazeAPIKey(testKey),
            logger: Logger(label: "tls") { _ in SwiftLogNoOpLogHandler() })
        let records = [event(1, user: "u1"), event(2, user: "u2")]
        let report = await sink.deliver(records)
        await sink.close()
        #expect(report.halt?.kind == .configuration, "\(String(describing: report.halt))")
        #expect(report.halt?.reason.contains("ca-certificates") == true, "\(String(describing: report.halt))")
        // Configuration halts keep the records untouched: no outcome, so the drain loop releases them.
        #expect(report.outcomes.isEmpty, "\(report.outcomes)")
    }
}
