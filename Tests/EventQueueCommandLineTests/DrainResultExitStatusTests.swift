import EventQueueCommandLine
import EventQueueDelivery
import Testing

struct DrainResultExitStatusTests {
    @Test func everyResultHasItsOwnDocumentedExitCode() {
        #expect(DrainResult.allDelivered.exitCode == 0)
        #expect(DrainResult.someDead.exitCode == 10)
        #expect(DrainResult.recordsRemain.exitCode == 11)
        #expect(DrainResult.sinkMisconfigured.exitCode == 12)
        #expect(DrainResult.anotherDrainerRunning.exitCode == 13)
        let codes = DrainResult.allCases.map(\.exitCode)
        #expect(Set(codes).count == codes.count, "every result has its own exit code")
    }
}
