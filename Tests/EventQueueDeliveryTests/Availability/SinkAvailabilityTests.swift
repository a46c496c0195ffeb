import EventQueue
import Testing

@testable import EventQueueDelivery

/// The sink-availability state machine of issue 30 point 2, on numbers: every time is an argument, nothing sleeps.
@Suite struct SinkAvailabilityTests {
    /// A moment `seconds` after an arbitrary start, on both clocks.
    static func at(_ seconds: Double) -> Moment {
        let milliseconds = Int64(seconds * 1000)
        return Moment(
            monotonic: .milliseconds(milliseconds), wallMilliseconds: 1_800_000_000_000 + milliseconds)
    }

    static let failure = SinkAvailability.Signal(answered: false, failure: "Braze answered 500")
    static let probeFailure = SinkAvailability.Signal(answered: false, failure: "Braze answered 500", probe: true)
    static let answer = SinkAvailability.Signal(answered: true)

    /// Drives the machine down with three failures at `seconds`.
    static func down(at seconds: Double = 0, seed: UInt64 = 1) -> SinkAvailability {
        var availability = SinkAvailability(at: at(0), seed: seed)
        for _ in 0..<3 { _ = availability.record(failure, at: at(seconds)) }
        return availability
    }

    @Test func aFewFailuresInARowMakeTheSinkUnavailableAndAnyAnswerResetsTheCount() {
        var availability = SinkAvailability(at: Self.at(0), seed: 1)
        #expect(availability.record(Self.failure, at: Self.at(1)) == nil)
        #expect(availability.record(Self.failure, at: Self.at(2)) == nil)
        #expect(availability.record(Self.answer, at: Self.at(3)) == nil, "an answer resets the count")
        #expect(availability.record(Self.failure, at: Self.at(4)) == nil)
        #expect(availability.record(Self.failure, at: Self.at(5)) == nil)
        #expect(availability.admission(at: Self.at(5)) == .open)
        #expect(availability.record(Self.failure, at: Self.at(6)) == .becameUnavailable)
        let snapshot = availability.snapshot
        #expect(snapshot.state == .unavailable)
        #expect(snapshot.sinceMilliseconds == Self.at(6).wallMilliseconds)
        #expect(snapshot.lastError == "Braze answered 500")
        #expect(snapshot.failuresInARow == 3)
        #expect(availability.admission(at: Self.at(6)) == .closed, "no claim until the probe is due")
    }

    @Test func aSinkThatDeclaresItselfDownIsUnavailableAtOnce() {
        var availability = SinkAvailability(at: Self.at(0), seed: 1)
        let declared = SinkAvailability.Signal(answered: false, failure: "disk full", declaredDown: true)
        #expect(availability.record(declared, at: Self.at(1)) == .becameUnavailable)
    }

    @Test func probesBackOffFromFiveSecondsToOnceAMinuteWithJitter() {
        var availability = Self.down(seed: 7)
        var probeTimes: [Double] = []
        var now = 0.0
        while now < 900 {
            let next = Double((availability.nextProbeAt ?? .zero).wholeMilliseconds) / 1000
            #expect(availability.admission(at: Self.at(next - 0.001)) == .closed)
            #expect(availability.admission(at: Self.at(next)) == .probe)
            now = next
            availability.probeStarted(at: Self.at(now))
            #expect(availability.admission(at: Self.at(now + 3600)) == .closed, "one probe at a time")
            probeTimes.append(now)
            _ = availability.record(Self.probeFailure, at: Self.at(now + 0.1))
        }
        let gaps = zip(probeTimes.dropFirst(), probeTimes).map { $0 - $1 }
        #expect((5.0...6.25).contains(probeTimes[0]), "the first probe 5 s (+ up to 25 %) after going down")
        let ceilings = [10.0, 20, 40, 60, 60, 60]
        for (gap, ceiling) in zip(gaps, ceilings) {
            #expect(gap >= ceiling && gap <= ceiling * 1.25 + 0.1, "gap \(gap) for a backoff of \(ceiling) s")
        }
        #expect(gaps.dropFirst(3).allSatisfy { $0 >= 60 }, "at most one probe a minute once the outage is long")
        #expect(availability.snapshot.probes == probeTimes.count)
        // A 300 s outage without launches: a handful of probes.
        #expect(probeTimes.filter { $0 <= 300 }.count <= 8, "\(probeTimes)")
    }

    @Test func theJitterDiffersBetweenHostsSoAFleetDoesNotProbeInStep() {
        let firsts = (1...8).map { seed in Self.down(seed: UInt64(seed)).nextProbeAt }
        #expect(Set(firsts).count > 1, "\(firsts)")
    }

    @Test func aLaunchProbesAtOnceButNeverCloserThanFiveSecondsToTheLastProbe() {
        var availability = Self.down()
        availability.requestProbe(at: Self.at(1))
        #expect(availability.admission(at: Self.at(1)) == .probe, "a launch does not wait for the backoff")
        availability.probeStarted(at: Self.at(1))
        _ = availability.record(Self.probeFailure, at: Self.at(1.2))
        availability.requestProbe(at: Self.at(2))
        #expect(availability.admission(at: Self.at(5.999)) == .closed, "a launch storm is no request storm")
        #expect(availability.admission(at: Self.at(6)) == .probe, "5 s after the last probe")
        // A launch never puts a probe later than it was.
        var later = Self.down()
        let scheduled = later.nextProbeAt
        later.requestProbe(at: Self.at(0.5))
        #expect(later.nextProbeAt ?? .zero <= scheduled ?? .zero)
    }

    @Test func launchesEveryFifteenSecondsMakeAtMostOneProbePerFiveSeconds() {
        var availability = Self.down()
        var probes = 0
        var time = 0.0
        while time < 300 {
            time += 0.5
            if time.truncatingRemainder(dividingBy: 15) == 0 { availability.requestProbe(at: Self.at(time)) }
            if availability.admission(at: Self.at(time)) == .probe {
                availability.probeStarted(at: Self.at(time))
                probes += 1
                _ = availability.record(Self.probeFailure, at: Self.at(time + 0.2))
            }
        }
        #expect(probes <= 300 / 5, "\(probes) probes in 300 s")
        #expect(probes >= 300 / 15 - 1, "each launch probed: \(probes)")
    }

    @Test func anAnswerFromTheProbeOrFromAnyDeliveryMakesTheSinkAvailableAtOnce() {
        var availability = Self.down(at: 10)
        availability.requestProbe(at: Self.at(20))
        availability.probeStarted(at: Self.at(20))
        let back = availability.record(
            SinkAvailability.Signal(answered: true, probe: true), at: Self.at(20.5))
        #expect(back == .becameAvailable(unavailableMilliseconds: 10_500, probes: 1))
        #expect(availability.admission(at: Self.at(20.5)) == .open)
        #expect(availability.snapshot.nextProbeAtMilliseconds == nil)
        #expect(availability.snapshot.failuresInARow == 0)

        // A request that was in flight when the sink went down and comes back answered counts as well.
        var other = Self.down()
        #expect(other.record(Self.answer, at: Self.at(1)) != nil)
        #expect(other.snapshot.state == .available)
    }

    @Test func failuresOfRequestsInFlightWhenTheSinkWentDownDoNotPushTheProbeOut() {
        var availability = Self.down()
        let scheduled = availability.nextProbeAt
        for _ in 0..<20 { _ = availability.record(Self.failure, at: Self.at(2)) }
        #expect(availability.nextProbeAt == scheduled)
        #expect(availability.snapshot.probes == 0)
    }

    @Test func aProbeLeftInFlightByAFailedPassDoesNotCloseTheSinkForGood() {
        var availability = Self.down()
        availability.probeStarted(at: Self.at(6))
        #expect(availability.admission(at: Self.at(600)) == .closed)
        availability.passStarting()
        #expect(availability.admission(at: Self.at(600)) == .probe)
    }

    @Test func nothingToProbeWithTakesTheSinkAsAvailable() {
        var availability = Self.down()
        availability.probeStarted(at: Self.at(6))
        #expect(availability.nothingToProbe(at: Self.at(6)) != nil)
        #expect(availability.admission(at: Self.at(6)) == .open)
    }

    @Test func aPolicyOutOfRangeIsMadeWorkable() {
        let policy = SinkAvailability.Policy(
            failuresBeforeUnavailable: -2, firstProbeDelay: .seconds(-1), longestProbeDelay: .zero, jitterShare: 9)
        #expect(policy.failuresBeforeUnavailable == 1)
        #expect(policy.firstProbeDelay > .zero)
        #expect(policy.longestProbeDelay >= policy.firstProbeDelay)
        #expect(policy.jitterShare == 1)
        #expect(SinkAvailability(at: Self.at(0)).backoff(afterFailedProbes: 1_000) == .seconds(60), "no overflow")
    }

    @Test func aLongestDelaySetBelowTheFirstAfterInitStillCapsTheBackoff() {
        var policy = SinkAvailability.Policy(firstProbeDelay: .seconds(5), longestProbeDelay: .seconds(60))
        policy.longestProbeDelay = .seconds(2)
        let availability = SinkAvailability(policy: policy, at: Self.at(0))
        #expect(availability.backoff(afterFailedProbes: 0) == .seconds(2))
        #expect(availability.backoff(afterFailedProbes: 3) == .seconds(2))
    }
}
