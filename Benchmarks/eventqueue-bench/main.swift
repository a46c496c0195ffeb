// eventqueue-bench: every performance scenario of EventQueue, each measured against its baseline in one run.
//
// Usage: eventqueue-bench [--quick] [--rounds N] [--dir PATH] [--bin-dir PATH] [--python PATH]
//                         [--support-dir PATH] [--out results.json] [--static-writer PATH]
//                         [--static-queuectl PATH] [--c-writer PATH] [SCENARIO ...]
// Scenarios: enqueue ndjson cold drain http contention backlog legacy peer fleet (default: all). scripts/bench runs them
// all and renders docs/PERFORMANCE.md from the JSON.
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

let allScenarios = ["enqueue", "ndjson", "cold", "drain", "http", "contention", "backlog", "legacy", "peer", "fleet"]
/// Run only when named (not by scripts/bench): "shrink", the space after a backlog (issue 30 #7); "limits", what the
/// size limit costs a writer (issue 30 #5); "recovery", a 1,000,000-record backlog after an outage drained to the
/// fake Braze at a scaled workspace limit (issue 30 #9).
let namedScenarios = ["shrink", "limits", "scrub", "recovery"]

func usage() -> Never {
    print(
        """
        usage: eventqueue-bench [--quick] [--rounds N] [--dir PATH] [--bin-dir PATH] [--python PATH]
                                [--support-dir PATH] [--out FILE] [--static-writer PATH]
                                [--static-queuectl PATH] [--c-writer PATH] [SCENARIO ...]
        scenarios: \(allScenarios.joined(separator: " ")) (default: all); also \(namedScenarios.joined(separator: " "))
        """)
    exit(64)
}

func parseSettings() -> Settings {
    var settings = Settings()
    var arguments = CommandLine.arguments.dropFirst().makeIterator()
    while let argument = arguments.next() {
        switch argument {
        case "--quick": settings.quick = true
        case "--rounds": settings.rounds = arguments.next().flatMap { Int($0) } ?? settings.rounds
        case "--dir": settings.directory = arguments.next() ?? settings.directory
        case "--bin-dir": settings.binDirectory = arguments.next() ?? settings.binDirectory
        case "--python": settings.python = arguments.next() ?? settings.python
        case "--support-dir": settings.supportDirectory = arguments.next() ?? settings.supportDirectory
        case "--out": settings.outputPath = arguments.next()
        case "--static-writer": settings.staticWriter = arguments.next()
        case "--static-queuectl": settings.staticQueuectl = arguments.next()
        case "--c-writer": settings.cWriter = arguments.next()
        case let name where allScenarios.contains(name) || namedScenarios.contains(name):
            settings.scenarios.append(name)
        default: usage()
        }
    }
    if settings.quick { settings.rounds = min(settings.rounds, 3) }
    if settings.scenarios.isEmpty { settings.scenarios = allScenarios }
    return settings
}

// Child modes: the bench re-runs itself as writer processes, consumers and servers.
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "child-writer": runWriterChild(Array(arguments.dropFirst()))
case "child-paced-writer": runPacedWriterChild(Array(arguments.dropFirst()))
case "child-backlog": await runBacklogChild(Array(arguments.dropFirst()))
case "child-legacy-writer": runLegacyWriterChild(Array(arguments.dropFirst()), eventQueue: false)
case "child-eq-writer": runLegacyWriterChild(Array(arguments.dropFirst()), eventQueue: true)
case "child-track-server": try runTrackServerChild(Array(arguments.dropFirst()))
default: break
}

let settings = parseSettings()
let results = Results()
let started = now()
log("eventqueue-bench\(settings.quick ? " --quick" : ""): queue files in \(settings.directory)")
do {
    for scenario in settings.scenarios {
        let scenarioStart = now()
        switch scenario {
        case "enqueue": try runEnqueueScenarios(settings, results)
        case "ndjson": try runBulkEnqueueScenario(settings, results)
        case "cold": try runColdPathScenario(settings, results)
        case "drain": try await runDrainScenario(settings, results)
        case "http": try await runHTTPScenario(settings, results)
        case "contention": try await runContentionScenario(settings, results)
        case "backlog": try runBacklogScenario(settings, results)
        case "legacy": try await runLegacyScenario(settings, results)
        case "peer": try runPeerScenario(settings, results)
        case "fleet": runFleetSimulation(settings, results)
        case "shrink": try await runShrinkScenario(settings, results)
        case "limits": try runLimitCostScenario(settings, results)
        case "scrub": try runScrubScenario(settings, results)
        case "recovery": try await runRecoveryScenario(settings, results)
        default: usage()
        }
        log("   (\(scenario): \(format(seconds(since: scenarioStart), decimals: 1)) s)\n")
    }
    results.scenarios["elapsed_seconds"] = seconds(since: started)
    if let output = settings.outputPath { try results.write(to: output, settings: settings) }
} catch {
    log("eventqueue-bench: \(error)")
    if let output = settings.outputPath { try? results.write(to: output, settings: settings) }
    exit(1)
}
