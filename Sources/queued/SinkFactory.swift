import EventQueueBraze
import EventQueueDelivery
import Foundation
import Logging

/// Builds the sink named by `--sink`: `jsonl:PATH` and `null` (EventQueueDelivery's), or `braze:BASE_URL`, whose
/// key comes from `--api-key-file`, else the systemd credential `braze-api-key` (`$CREDENTIALS_DIRECTORY`), else
/// `$BRAZE_API_KEY`, and is never logged. Returns the sink and, for Braze, how to read its rate-limit state.
func makeSink(
    spec: String, apiKeyFile: String?, brazeMaxObjects: Int?, maxInFlight: Int, maxRequestsPerSecond: Int?,
    settleDelay: Duration = BrazeSink.defaultSettleDelay, observer: (any BrazeRequestObserver)?, logger: Logger
) throws(DaemonFailure) -> (sink: any Sink, rateStatus: (@Sendable () async -> BrazeRateStatus)?) {
    if spec.hasPrefix("braze:") {
        let baseURL = String(spec.dropFirst("braze:".count))
        let key: BrazeAPIKey
        do {
            try BrazeSink.validate(baseURL: baseURL)
            key = try BrazeAPIKey.resolve(apiKeyFile: apiKeyFile, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw .configuration("\(error)")
        }
        if let brazeMaxObjects, brazeMaxObjects < 1 {
            throw .configuration("--braze-max-objects must be at least 1")
        }
        let sink = BrazeSink(
            baseURL: baseURL, apiKey: key, maxObjectsPerRequest: brazeMaxObjects, maxInFlight: maxInFlight,
            maxRequestsPerSecond: maxRequestsPerSecond, settleDelay: settleDelay, observer: observer, logger: logger)
        logger.debug("sink ready", metadata: ["sink": "\(sink.name)"])
        return (sink, { await sink.rateStatus() })
    }
    do {
        let sink = try SinkSpec(parsing: spec).makeSink()
        logger.debug("sink ready", metadata: ["sink": "\(sink.name)"])
        return (sink, nil)
    } catch {
        throw .configuration(error.description + ", or braze:BASE_URL")
    }
}
