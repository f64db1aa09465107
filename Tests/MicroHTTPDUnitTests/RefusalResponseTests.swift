import MicroHTTPD
import Testing

/// `RequestRefusal.defaultResponse`: the problem document each refusal answers with, and `Retry-After` only where the
/// refusal says when to retry.
@Suite struct RefusalResponseTests {
    @Test(arguments: [
        (RequestRefusal.malformed("two Content-Length fields"), "Bad Request", "two Content-Length fields"),
        (.transferCodingNotImplemented("gzip"), "Not Implemented", "transfer coding 'gzip' is not implemented (only chunked is)"),
        (.targetTooLong(limit: 8192), "URI Too Long", "the request target exceeds 8192 bytes"),
        (.tooManyQueryParameters(limit: 64), "URI Too Long", "the query has more than 64 parameters"),
        (.bodyBudgetExhausted(retryAfterSeconds: 2), "Service Unavailable", "too many request bodies in flight; retry later"),
        (.serverStopping, "Service Unavailable", "the server is stopping"),
    ])
    func eachRefusalAnswersWithItsProblem(refusal: RequestRefusal, title: String, detail: String) {
        let response = refusal.defaultResponse
        let body = String(decoding: response.body, as: UTF8.self)
        #expect(response.status == refusal.status)
        #expect(body.contains(#""title":"\#(title)""#) && body.contains(#""detail":"\#(detail)""#))
        #expect(body.contains(#""status":\#(refusal.status)"#) && body.contains(#""type":"about:blank""#))
        let names = response.headers.map(\.name)
        let retry = response.headers.first { $0.name == "Retry-After" }?.value
        #expect(Array(names.prefix(2)) == ["Content-Type", "Cache-Control"])
        #expect(response.headers[1].value == "no-store")
        #expect(retry == (refusal == .bodyBudgetExhausted(retryAfterSeconds: 2) ? "2" : nil))
    }
}
