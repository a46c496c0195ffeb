import EventQueueDelivery
import Logging

/// Builds the sink named by `--sink`: the one place sink specs turn into sinks, so the Braze sink is wired in
/// here and nowhere else.
///
/// - `jsonl:PATH` (`jsonl:-` is stdout) and `null` come from EventQueueDelivery.
/// - `braze:BASE_URL` takes its key from `--api-key-file` (or the environment, once wired) and honours
///   `--braze-max-objects`.
func makeSink(spec: String, apiKeyFile: String?, brazeMaxObjects: Int?, logger: Logger) throws -> any Sink {
    if spec.hasPrefix("braze:") {
        throw ConfigurationProblem(
            "sink \(spec) is not wired in this build of queued: use jsonl:PATH or null until the Braze sink "
                + "(EventQueueBraze) is linked")
    }
    do {
        let sink = try SinkSpec(parsing: spec).makeSink()
        logger.debug("sink ready", metadata: ["sink": "\(sink.name)"])
        return sink
    } catch {
        throw ConfigurationProblem(error.description + ", or braze:BASE_URL")
    }
}
