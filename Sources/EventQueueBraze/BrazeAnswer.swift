import EventQueue
import EventQueueDelivery

/// What one `/users/track` answer means for the records of that request.
enum BrazeAnswer: Sendable, Hashable {
    /// 2xx: everything applied except the objects named in `errors`.
    case accepted(errors: [ObjectError])
    /// 400 (and other 4xx that mean "this request is wrong"): nothing applied; `message` is Braze's.
    case badRequest(status: Int, message: String)
    /// 401, 403, 404, and any 3xx (never followed: the key would go with it): the key or the URL is wrong.
    case misconfigured(status: Int, message: String)
    /// 429: not the records' fault; `afterMilliseconds` from `Retry-After` or `X-RateLimit-Reset`.
    case rateLimited(afterMilliseconds: Int64?)
    /// 5xx, 408, a timeout or a connection error: nothing said about the records (`RetryCause.destination`).
    case transient(reason: String)
    /// The endpoint's TLS certificate could not be verified: nothing is sent until someone installs the trust
    /// store or fixes the clock or the URL; retrying would only spend the records' attempts.
    case untrustedCertificate(reason: String)

    /// A certificate verification failure as `untrustedCertificate`, with what to do; else `nil`. Matched on the
    /// error's text: it is NIOSSL's error, which this target does not link.
    static func untrustedCertificate(_ error: any Error, endpoint: String) -> BrazeAnswer? {
        let text = String(describing: error)
        let verification = ["CERTIFICATE_VERIFY_FAILED", "failedToValidateHostname", "unableToValidateCertificate"]
        guard verification.contains(where: text.contains) else { return nil }
        return .untrustedCertificate(
            reason:
                "the TLS certificate of \(endpoint) could not be verified (\(ExternalText.escaped(String(text.prefix(300))))): "
                + "install the ca-certificates package (apt-get install ca-certificates) and check the system clock "
                + "and the instance URL; the records are kept")
    }

    /// One entry of a 2xx response's `errors` array.
    struct ObjectError: Sendable, Hashable {
        var type: String
        var inputArray: String
        var index: Int
    }

    /// Interprets an HTTP response. `now` is the wall clock in milliseconds (for `X-RateLimit-Reset`).
    static func interpret(
        status: Int, headers: [(name: String, value: String)], body: [UInt8], nowMilliseconds: Int64
    ) -> BrazeAnswer {
        switch status {
        case 200..<300:
            return .accepted(errors: objectErrors(in: body))
        case 401, 403, 404:
            return .misconfigured(status: status, message: message(in: body))
        case 300..<400:
            let location = BrazeRateHeaders.value("location", in: headers) ?? "(no Location)"
            return .misconfigured(
                status: status,
                message:
                    "redirected to \(ExternalText.escaped(String(ExternalText.redacted(location).prefix(300)))), not followed "
                    + "(the API key would go with it); fix the base URL")
        case 429:
            return .rateLimited(
                afterMilliseconds: BrazeRateHeaders(headers).retryHint(nowMilliseconds: nowMilliseconds))
        case 408, 500..<600:
            return .transient(reason: "Braze answered \(status): \(message(in: body))")
        case 400..<500:
            return .badRequest(status: status, message: message(in: body))
        default:
            return .transient(reason: "unexpected HTTP status \(status): \(message(in: body))")
        }
    }

    /// Braze's `message`, else the start of the body; sanitized (`ExternalText`): it may echo the key or hold
    /// terminal control sequences.
    static func message(in body: [UInt8]) -> String {
        if let object = try? JSONValue.parse(String(decoding: body, as: UTF8.self)).objectValue,
            let message = object["message"]?.stringValue
        {
            return ExternalText.escaped(String(ExternalText.redacted(message).prefix(500)))
        }
        guard !body.isEmpty else { return "(no body)" }
        // Redact the whole body, not the cut: a cut may split the key and leave its first half.
        return ExternalText.escaped(String(ExternalText.redacted(String(decoding: body, as: UTF8.self)).prefix(200)))
    }

    /// The `errors` array of a 2xx response; entries that name no object are ignored.
    static func objectErrors(in body: [UInt8]) -> [ObjectError] {
        guard let object = try? JSONValue.parse(String(decoding: body, as: UTF8.self)).objectValue,
            let errors = object["errors"]?.arrayValue
        else { return [] }
        return errors.compactMap { entry in
            guard let entry = entry.objectValue, let array = entry["input_array"]?.stringValue,
                let index = entry["index"]?.numberValue?.integerValue, let position = Int(exactly: index)
            else { return nil }
            return ObjectError(type: entry["type"]?.stringValue ?? "unknown error", inputArray: array, index: position)
        }
    }
}
