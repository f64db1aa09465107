internal import CCurl
import Dispatch
import TabWebhooks

/// The outgoing HTTP client of webhook deliveries: libcurl from Debian, through the one C function of the CCurl
/// shim. It connects only to an address the policy checked (`CURLOPT_CONNECT_TO`; `Host` and TLS's SNI and
/// certificate check still use the URL's name), follows no redirect, uses no proxy, speaks http and https only,
/// checks TLS against the system's CA store, and reads at most 64 KiB of an answer. Each request blocks one
/// Dispatch worker thread, never Swift's cooperative pool.
struct WebhookHTTPClient: Sendable {
    /// The most of an answer's body that is read (it is then dropped).
    static let maxAnswerBytes = 64 << 10

    private static let initialized: Bool = ccurl_global_init() == 0

    /// POSTs `body` with `headers` to `destination`'s URL at its first checked address; the answer's status, or
    /// why none came within `timeoutSeconds`.
    func post(to destination: Destination, headers: [(name: String, value: String)], body: [UInt8], timeoutSeconds: Int64) async
        -> DeliveryAnswer
    {
        guard Self.initialized else { return .noAnswer("libcurl failed to initialize") }
        guard let address = destination.addresses.first else { return .noAnswer("no checked address") }
        let url = destination.url
        let connectHost = address.isIPv4 ? address.description : "[\(address)]"
        // Any host and port of this one request (no redirects are followed) goes to the checked address.
        let connectTo = "::\(connectHost):\(url.port)"
        let lines = headers.map { "\($0.name): \($0.value)" } + ["Expect:"]  // no 100-continue round trip
        return await withCheckedContinuation { (continuation: CheckedContinuation<DeliveryAnswer, Never>) in
            DispatchQueue.global().async {
                continuation.resume(
                    returning: Self.perform(
                        url: url.description, connectTo: connectTo, headers: lines, body: body, timeoutMillis: timeoutSeconds * 1000))
            }
        }
    }

    /// The blocking request.
    private static func perform(url: String, connectTo: String, headers: [String], body: [UInt8], timeoutMillis: Int64) -> DeliveryAnswer {
        var status = 0
        var error = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let cStrings = headers.map { strdup($0) }
        defer { for string in cStrings { free(string) } }
        let code = cStrings.map { UnsafePointer($0) }.withUnsafeBufferPointer { headerPointers in
            body.withUnsafeBytes { bytes in
                ccurl_post(
                    url, connectTo, headerPointers.baseAddress, Int32(headerPointers.count), bytes.baseAddress, body.count,
                    Int(timeoutMillis), maxAnswerBytes, &status, &error)
            }
        }
        if code == 0, status > 0 { return .status(status) }
        let reason = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return .noAnswer(reason.isEmpty ? "libcurl error \(code)" : reason)
    }
}

#if canImport(Glibc)
    import Glibc
#endif

extension WebhookHTTPClient {
    /// Sends a bodiless `method` request (`PURGE`) to `url` with `headers`; the answer's status, or why none came
    /// within `timeoutMillis`. Unlike ``post(to:headers:body:timeoutSeconds:)`` it connects wherever the URL's name
    /// resolves: a purge target is the operator's own cache (often on loopback), not an address a tenant chose.
    func send(method: String, url: String, headers: [(name: String, value: String)], timeoutMillis: Int64) async -> DeliveryAnswer {
        guard Self.initialized else { return .noAnswer("libcurl failed to initialize") }
        let lines = headers.map { "\($0.name): \($0.value)" }
        return await withCheckedContinuation { (continuation: CheckedContinuation<DeliveryAnswer, Never>) in
            DispatchQueue.global().async {
                var status = 0
                var error = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
                let cStrings = lines.map { strdup($0) }
                defer { for string in cStrings { free(string) } }
                let code = cStrings.map { UnsafePointer($0) }.withUnsafeBufferPointer { pointers in
                    ccurl_request(
                        method, url, pointers.baseAddress, Int32(pointers.count), Int(timeoutMillis), Self.maxAnswerBytes, &status, &error)
                }
                if code == 0, status > 0 {
                    continuation.resume(returning: .status(status))
                    return
                }
                let reason = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                continuation.resume(returning: .noAnswer(reason.isEmpty ? "libcurl error \(code)" : reason))
            }
        }
    }
}
