import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Starting, notifying systemd and stopping: the contract a `Type=notify` unit relies on.
@Suite struct DaemonLifecycleTests {
    @Test func notificationsArriveInOrderAndStopIsClean() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        try await enqueueEvents(3, db: db, in: scratch)
        let daemon = try await DaemonProcess(
            scratch: scratch, db: db, arguments: ["--drain-on-start"], environment: ["WATCHDOG_USEC": "200000"])
        try await withDaemon(daemon) { daemon in
            #expect(await daemon.notify.waitFor { $0.contains("STATUS=pending 0; last pass all_delivered") } != nil)
            #expect(await daemon.notify.waitFor { $0.contains("WATCHDOG=1") } != nil)
            let status = await daemon.stop()
            #expect(status == 0, "log:\n\(daemon.log)")
            let messages = daemon.notify.messages
            let ready = try #require(messages.firstIndex { $0.contains("READY=1") })
            let passStatus = try #require(messages.firstIndex { $0.contains("STATUS=pending 0; last pass") })
            let watchdog = try #require(messages.firstIndex { $0.contains("WATCHDOG=1") })
            let stopping = try #require(messages.firstIndex { $0.contains("STOPPING=1") })
            #expect(ready < passStatus)
            #expect(ready < watchdog)
            #expect(passStatus < stopping)
            #expect(watchdog < stopping)
            #expect(!messages[(stopping + 1)...].contains { $0.contains("READY=1") })
        }
        #expect(!FileManager.default.fileExists(atPath: db + "-wal"), "the queue was closed: no -wal left")
        #expect(!FileManager.default.fileExists(atPath: daemon.socket), "the socket file was removed")
        #expect(try DeliveredLine.parse(file: daemon.sinkFile).count == 3)
    }

    @Test func socketIsGroupOnly() async throws {
        let scratch = Scratch()
        let daemon = try await DaemonProcess(scratch: scratch, db: scratch.file("queue.db"))
        try await withDaemon(daemon) { daemon in
            let attributes = try FileManager.default.attributesOfItem(atPath: daemon.socket)
            #expect((attributes[.posixPermissions] as? Int) == 0o660)
            #expect((attributes[.type] as? FileAttributeType) == .typeSocket)
        }
    }

    @Test func staleSocketIsReplacedButAnotherFileIsNot() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        let first = try await DaemonProcess(scratch: scratch, db: db)
        // SIGKILL leaves the socket file behind: the next daemon must replace it.
        first.signal(SIGKILL)
        _ = await first.waitForExit(timeout: .seconds(10))
        #expect(FileManager.default.fileExists(atPath: first.socket))
        let second = try await DaemonProcess(scratch: scratch, db: db)
        try await withDaemon(second) { daemon in
            let answer = try await daemon.request("GET", "/status")
            #expect(answer.status == 200)
        }
        // A regular file where the socket should go is left alone, and the daemon exits 73.
        _ = FileManager.default.createFile(atPath: second.socket, contents: Data("keep me".utf8))
        let third = try await DaemonProcess(scratch: scratch, db: db, waitForReady: false)
        let status = await third.waitForExit(timeout: .seconds(20))
        await third.stop()
        #expect(status == 73, "log:\n\(third.log)")
        #expect((try? String(contentsOfFile: second.socket, encoding: .utf8)) == "keep me")
    }

    @Test func badQueueFileAndBadConfigurationExit78() async throws {
        let scratch = Scratch()
        let notAQueue = scratch.file("not-a-queue.db")
        _ = FileManager.default.createFile(atPath: notAQueue, contents: Data(repeating: 0x41, count: 4096))
        let daemon = try await DaemonProcess(scratch: scratch, db: notAQueue, waitForReady: false)
        let status = await daemon.waitForExit(timeout: .seconds(20))
        await daemon.stop()
        #expect(status == 78, "log:\n\(daemon.log)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: notAQueue)) == Data(repeating: 0x41, count: 4096))

        // A Braze sink without a key is a configuration error that says where a key can come from.
        let braze = try await DaemonProcess(
            scratch: scratch, db: scratch.file("queue.db"), name: "b",
            arguments: ["--sink", "braze:https://rest.iad-01.braze.com"], waitForReady: false)
        let brazeStatus = await braze.waitForExit(timeout: .seconds(20))
        await braze.stop()
        #expect(brazeStatus == 78)
        #expect(braze.log.contains("no Braze API key"), "log:\n\(braze.log)")
        #expect(braze.log.contains("--api-key-file"), "log:\n\(braze.log)")
    }
}
