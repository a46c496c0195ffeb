// fake-braze: a local Braze `/users/track` and `/users/delete` for benchmarks and integration tests.
//
//   fake-braze --port N --api-key KEY [--faults JSON] [--max-seconds S]
//
// Binds 127.0.0.1 only, prints `listening on 127.0.0.1:PORT` once ready, and stops on SIGTERM/SIGINT or after
// --max-seconds (default 3600) so a forgotten process never outlives its test run.
//
// Outages, switched at run time: SIGUSR1 stops listening (connections are refused, open ones closed) and SIGUSR2
// listens again on the same port; `POST /_faults` sets answer faults (`{"serverErrorRate":1}` for 500s,
// `{"hangRate":1}` for requests never answered, `{}` for none).

import FakeBraze
import Foundation

struct Options {
    var port = 0
    var apiKey: String?
    var faults = FakeBrazeFaults.none
    var maxSeconds = 3600.0
}

func usage(_ message: String) -> Never {
    FileHandle.standardError.write(
        Data(
            "fake-braze: \(message)\nusage: fake-braze --port N --api-key KEY [--faults JSON] [--max-seconds S]\n".utf8)
    )
    exit(2)
}

func parseOptions(_ arguments: [String]) -> Options {
    var options = Options()
    var iterator = arguments.makeIterator()
    while let argument = iterator.next() {
        guard let value = iterator.next() else { usage("\(argument) needs a value") }
        switch argument {
        case "--port":
            guard let port = Int(value), (0...65535).contains(port) else { usage("invalid --port \(value)") }
            options.port = port
        case "--api-key":
            options.apiKey = value
        case "--faults":
            do {
                options.faults = try JSONDecoder().decode(FakeBrazeFaults.self, from: Data(value.utf8))
            } catch {
                usage("invalid --faults JSON: \(error)")
            }
        case "--max-seconds":
            guard let seconds = Double(value), seconds > 0 else { usage("invalid --max-seconds \(value)") }
            options.maxSeconds = seconds
        default:
            usage("unknown option \(argument)")
        }
    }
    return options
}

/// Waits for SIGTERM, SIGINT or the time limit, whichever comes first.
func waitForStop(maxSeconds: Double) async -> String {
    let (stream, continuation) = AsyncStream.makeStream(of: String.self)
    var sources: [any DispatchSourceSignal] = []
    for (number, name) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { continuation.yield(name) }
        source.resume()
        sources.append(source)
    }
    let timer = Task {
        try? await Task.sleep(for: .seconds(maxSeconds))
        continuation.yield("--max-seconds elapsed")
    }
    var reason = "stream ended"
    for await next in stream {
        reason = next
        break
    }
    timer.cancel()
    for source in sources { source.cancel() }
    return reason
}

let options = parseOptions(Array(CommandLine.arguments.dropFirst()))
guard let apiKey = options.apiKey, !apiKey.isEmpty else { usage("--api-key is required") }
do {
    let server = try await FakeBrazeServer.start(
        apiKey: apiKey, host: "127.0.0.1", port: options.port, configuration: options.faults)
    // Written straight to the descriptor (no stdio buffer), so a parent reading the pipe sees it at once.
    FileHandle.standardOutput.write(Data("listening on 127.0.0.1:\(server.port)\n".utf8))
    var switches: [any DispatchSourceSignal] = []
    for (number, listening) in [(SIGUSR1, false), (SIGUSR2, true)] {
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler {
            Task {
                if listening {
                    do {
                        try await server.startListening()
                        FileHandle.standardError.write(Data("fake-braze: listening again\n".utf8))
                    } catch {
                        FileHandle.standardError.write(Data("fake-braze: cannot listen again: \(error)\n".utf8))
                    }
                } else {
                    await server.stopListening()
                    FileHandle.standardError.write(Data("fake-braze: not listening (connections refused)\n".utf8))
                }
            }
        }
        source.resume()
        switches.append(source)
    }
    let reason = await waitForStop(maxSeconds: options.maxSeconds)
    for source in switches { source.cancel() }
    try await server.stop()
    FileHandle.standardError.write(Data("fake-braze: stopped (\(reason))\n".utf8))
} catch {
    FileHandle.standardError.write(Data("fake-braze: \(error)\n".utf8))
    exit(1)
}
