// fleet: the rate governor of H hosts against one workspace limit, simulated (BrazeFleetSimulation drives the
// same BrazeRatePolicy the daemon's BrazeRateGovernor runs, on a simulated clock): goodput, share of 429s and
// fairness for fleets larger than one machine can run as processes.
import FleetSimulation

func runFleetSimulation(_ settings: Settings, _ results: Results) {
    log("== fleet: H hosts sharing one Braze workspace, simulated (BrazeFleetSimulation, the daemon's policy)")
    log("   each host: 24 requests in flight at most, round trip ±20 %; ideal = all requests / limit x window")
    log(
        pad("hosts", 7) + pad("limit", 12) + pad("rtt", 7) + pad("skew", 8) + pad("ideal s", 9) + pad("bound s", 9)
            + pad("took s", 9) + pad("goodput", 9) + pad("vs bound", 10) + pad("429 share", 11) + "slowest/fastest")
    var rows: [[String: Any]] = []
    // (hosts, limit per 3 s, round trip ms, requests per host, clock skew ms): the benchmark's scale (150 per
    // 3 s, as the process benchmark), Braze's real limit for 10 to 200 hosts, and clocks off by up to 2 s.
    var cases: [(Int, Int, Double, Int, Int64)] = [
        (1, 150, 50, 534, 0), (4, 150, 50, 200, 0), (2, 150, 10, 200, 0), (8, 150, 10, 200, 0),
        (10, 3_000, 50, 3_000, 0), (50, 3_000, 50, 600, 0), (200, 3_000, 50, 150, 0), (200, 3_000, 10, 150, 0),
        (50, 3_000, 50, 600, 2_000),
    ]
    if settings.quick { cases = Array(cases.prefix(5)) }
    for (hosts, limit, latency, requests, skew) in cases {
        var configuration = BrazeFleetSimulation.Configuration(
            hosts: hosts, requestsPerHost: requests, limit: limit, windowMilliseconds: 3_000,
            latencyMilliseconds: latency)
        configuration.clockSkewMilliseconds = skew
        let outcome = BrazeFleetSimulation(configuration).run()
        log(
            pad(String(hosts), 7) + pad("\(limit)/3 s", 12) + pad("\(Int(latency)) ms", 7) + pad("±\(skew)", 8)
                + pad(format(outcome.idealSeconds, decimals: 1), 9)
                + pad(format(outcome.windowBoundSeconds, decimals: 1), 9)
                + pad(format(outcome.elapsedSeconds, decimals: 1), 9)
                + pad(format(outcome.goodput * 100, decimals: 1) + " %", 9)
                + pad(format(outcome.goodputAgainstWindowBound * 100, decimals: 1) + " %", 10)
                + pad(format(outcome.rateLimitedShare * 100, decimals: 1) + " %", 11)
                + format(outcome.fairness, decimals: 2))
        rows.append([
            "hosts": hosts, "limit": limit, "window_seconds": 3, "latency_ms": latency, "requests_per_host": requests,
            "clock_skew_ms": skew, "ideal_seconds": outcome.idealSeconds, "elapsed_seconds": outcome.elapsedSeconds,
            "goodput": outcome.goodput, "window_bound_seconds": outcome.windowBoundSeconds,
            "goodput_against_window_bound": outcome.goodputAgainstWindowBound, "requests": outcome.requests,
            "rate_limited": outcome.rateLimited,
            "rate_limited_share": outcome.rateLimitedShare, "fairness": outcome.fairness,
        ])
    }
    results.scenarios["fleet"] = rows
}
