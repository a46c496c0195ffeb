import EventQueueBraze
import EventQueueDelivery
import Foundation
import Logging

/// Builds the sink named by `--sink`: the one place sink specs turn into sinks.
///
/// - `jsonl:PATH` (`jsonl:-` is stdout) and `null` come from EventQueueDelivery.
/// - `braze:BASE_URL` posts to `BASE_URL/users/track`. Its key comes from `--api-key-file`, else the systemd
///   credential `braze-api-key` (`$CREDENTIALS_DIRECTORY`), else `$BRAZE_API_KEY`; it is never logged.
///   `--braze-max-objects` caps the objects per request for accounts limited to 50 combined.
///   `--max-in-flight` and `--max-requests-per-second` pace its requests (`BrazeRateGovernor`); `--settle-delay`
///   is how long an identity call holds its users after Braze answered it.
///
/// Returns the sink and, for Braze, how to read its rate-limit state (`GET /status`, `/metrics`).
func makeSink(
    spec: String, apiKeyFile: String?, brazeMaxObjects: Int?, maxInFlight: Int, maxRequestsPerSecond: Int?,
    settleDelay: Duration = BrazeSink.defaultSettleDelay, observer: (any BrazeRequestObserver)?, logger: Logger
) throws -> (sink: any Sink, rateStatus: (@Sendable () async -> BrazeRateStatus)?) {
    if spec.hasPrefix("braze:") {
        let baseURL = String(spec.dropFirst("braze:".count))
        do {
            try BrazeSink.validate(baseURL: baseURL)
            let key = try BrazeAPIKey.resolve(apiKeyFile: apiKeyFile, environment: ProcessInfo.processInfo.environment)
            if let brazeMaxObjects, brazeMaxObjects < 1 {
                throw ConfigurationProblem("--braze-max-objects must be at least 1")
            }
            let sink = BrazeSink(
                baseURL: baseURL, apiKey: key, maxObjectsPerRequest: brazeMaxObjects, maxInFlight: maxInFlight,
                maxRequestsPerSecond: maxRequestsPerSecond, settleDelay: settleDelay, observer: observer,
                logger: logger)
            logger.debug("sink ready", metadata: ["sink": "\(sink.name)"])
            return (sink, { await sink.rateStatus() })
        } catch let error as BrazeConfigurationError {
            throw ConfigurationProblem("\(error)")
        }
    }
    do {
        let sink = try SinkSpec(parsing: spec).makeSink()
        logger.debug("sink ready", metadata: ["sink": "\(sink.name)"])
        return (sink, nil)
    } catch {
        throw ConfigurationProblem(error.description + ", or braze:BASE_URL")
    }
}
