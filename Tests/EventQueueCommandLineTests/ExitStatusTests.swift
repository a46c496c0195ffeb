import EventQueueTestSupport
import Foundation
import Testing

import EventQueueDelivery

@testable import EventQueueCommandLine

/// The exit-status table of docs/OPERATING.md is the code's (`ExitStatus`): same statuses, meanings and tools.
@Suite struct ExitStatusTests {
    static let operating =
        #filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast(3)
        .joined(separator: "/") + "/docs/OPERATING.md"

    /// The rows between the `exit-statuses` markers of docs/OPERATING.md.
    static func operatingRows() throws -> [String] {
        let text = try String(contentsOfFile: operating, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try #require(lines.firstIndex { $0.hasPrefix("<!-- exit-statuses") }, "no table in \(operating)")
        let end = try #require(lines.firstIndex { $0 == "<!-- /exit-statuses -->" }, "no end of the table")
        return lines[(start + 3)..<end].filter { !$0.isEmpty }
    }

    @Test func operatingListsEveryStatusOfTheTableAndNoOther() throws {
        let expected = ExitStatus.allCases.map { status in
            "| \(status.rawValue) | \(status.meaning) | \(status.tools.map(\.rawValue).joined(separator: ", ")) |"
        }
        let rows = try Self.operatingRows()
        #expect(rows.count == expected.count)
        for (row, wanted) in zip(rows, expected) { #expect(row == wanted) }
    }

    @Test func drainResultsExitWithTheTablesStatuses() {
        #expect(
            DrainResult.allCases.map(\.exitStatus) == [
                .success, .someDead, .recordsRemain, .sinkMisconfigured, .anotherDrainerRunning,
            ])
        #expect(DrainResult.allCases.map(\.exitCode) == [0, 10, 11, 12, 13])
    }

    @Test func eachToolsHelpListsItsOwnStatuses() {
        let queued = ExitStatus.helpText(for: .queued)
        #expect(queued.contains("70 an internal failure"))
        #expect(!queued.contains("69 ") && !queued.contains("`"), "\(queued)")
        let listed = ExitStatus.allCases.filter {
            queued.contains(": \($0.rawValue) ") || queued.contains("; \($0.rawValue) ")
        }
        #expect(listed == ExitStatus.allCases.filter { $0.tools.contains(.queued) })
        let queuectl = ExitStatus.helpText(for: .queuectl)
        #expect(queuectl.contains("69 `drain`: no daemon listens"))
        #expect(!queuectl.contains("70 "))
    }
}
