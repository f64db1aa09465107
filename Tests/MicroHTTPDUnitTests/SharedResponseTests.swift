import MicroHTTPD
import Testing

/// `HTTPResponse(shared:)`: a prepared response handed on as a deferred reply's answer, read like a copy, and a copy
/// of its own as soon as anything in it changes.
@Suite struct SharedResponseTests {
    static let body = Array(#"{"tabs":[]}"#.utf8)

    @Test func aSharedResponseReadsAsItsPreparedResponse() throws {
        let prepared = try PreparedResponse(status: 200, headers: [HTTPHeader("ETag", "\"a\"")], body: Self.body)
        let shared = HTTPResponse(shared: prepared)
        #expect(shared.shared === prepared)
        #expect(shared.status == 200 && shared.headers == prepared.headers && shared.body == Self.body)
        #expect(shared.announcedLength == nil)
    }

    @Test func aSharedBodilessResponseKeepsItsAnnouncedLength() throws {
        let prepared = try PreparedResponse(status: 304, headers: [], announcingLength: 538)
        let shared = HTTPResponse(shared: prepared)
        #expect(shared.body.isEmpty && shared.announcedLength == 538)
    }

    @Test func changingASharedResponseMakesItAResponseOfItsOwn() throws {
        let prepared = try PreparedResponse(status: 200, headers: [HTTPHeader("ETag", "\"a\"")], body: Self.body)
        var changed = HTTPResponse(shared: prepared)
        changed.headers.append(HTTPHeader("Preference-Applied", "wait=5"))
        #expect(changed.shared == nil)
        #expect(changed.body == Self.body, "the body is kept when the headers change")
        var status = HTTPResponse(shared: prepared)
        status.status = 203
        #expect(status.shared == nil && status.body == Self.body)
        var body = HTTPResponse(shared: prepared)
        body.body = [1]
        #expect(body.shared == nil && body.body == [1])
    }
}
