/// How the sink did lately, for `GET /status`.
struct SinkHealth: Sendable {
    var healthy = true
    var lastError: String?
}
