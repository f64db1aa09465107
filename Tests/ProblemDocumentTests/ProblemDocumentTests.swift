import ProblemDocument
import Testing

/// The one writer of problem bodies: member order, escaping, and the kinds' catalogue.
@Suite struct ProblemDocumentTests {
    private func text(_ document: ProblemDocument) -> String { String(decoding: document.json, as: UTF8.self) }

    @Test func membersAreWrittenInTheOrderOfTheirNamesBytes() {
        let document = ProblemKind.notFound.document(
            detail: "no such layout", members: [("refused", Array("[1]".utf8)), ("errors", Array("[]".utf8)), ("Zed", Array("0".utf8))])
        #expect(
            text(document)
                == #"{"Zed":0,"detail":"no such layout","errors":[],"refused":[1],"status":404,"title":"Not Found","type":"urn:tabserver:problem:not-found"}"#
        )
    }

    @Test func theStandardMembersCannotBeReplaced() {
        let document = ProblemDocument(
            type: "about:blank", title: "Bad Request", status: 400, detail: "d", members: [("status", Array("200".utf8))])
        #expect(text(document) == #"{"detail":"d","status":400,"title":"Bad Request","type":"about:blank"}"#)
    }

    @Test func stringsAreEscapedOnceTheCanonicalWay() {
        let document = ProblemDocument(type: "about:blank", title: "Bad Request", status: 400, detail: "a\"b\\c\nd\u{1}e/é\u{7F}")
        #expect(
            text(document)
                == "{\"detail\":\"a\\\"b\\\\c\\nd\\u0001e/é\u{7F}\",\"status\":400,\"title\":\"Bad Request\",\"type\":\"about:blank\"}")
    }

    @Test func startingIsAServiceUnavailableKind() {
        #expect(ProblemKind.starting.status == 503 && ProblemKind.starting.title == "Service Unavailable")
        #expect(ProblemKind.starting.type == "urn:tabserver:problem:starting")
        #expect(Set(ProblemKind.allCases.map(\.rawValue)).count == ProblemKind.allCases.count, "each slug once")
    }
}
