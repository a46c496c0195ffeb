import Testing

/// The checker itself must catch what it claims to catch.
@Suite struct HistoryCheckerTests {
    typealias Delivery = HistoryChecker.Delivery

    @Test func cleanHistoryPasses() {
        let report = HistoryChecker.check(
            enqueued: ["a", "b", "c"],
            delivered: [
                Delivery(marker: "a", user: "u1", id: 1), Delivery(marker: "b", user: "u2", id: 2),
                Delivery(marker: "c", user: "u1", id: 3),
            ])
        #expect(report.lost.isEmpty && report.duplicated.isEmpty && report.reordered.isEmpty)
        #expect(report.unexpected.isEmpty)
    }

    @Test func findsLostDuplicatedReorderedAndUnexpected() {
        let report = HistoryChecker.check(
            enqueued: ["a", "b", "c", "d"],
            delivered: [
                Delivery(marker: "c", user: "u1", id: 3), Delivery(marker: "a", user: "u1", id: 1),
                Delivery(marker: "c", user: "u1", id: 3), Delivery(marker: "x", user: "u9", id: 9),
                Delivery(marker: "b", user: "u2", id: 2),
            ])
        #expect(report.lost == ["d"])
        #expect(report.duplicated == ["c": 2])
        #expect(report.duplicateDeliveries == 1)
        #expect(report.reordered == ["u1: 1 after 3"])
        #expect(report.unexpected == ["x"])
    }
}
