import Foundation
import TabAccess
import Testing

@Suite struct TokenSpecTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)  // 2027-01-15T08:00:00Z

    func spec(_ json: String) throws(InvalidFields) -> TokenSpec {
        try TokenSpec(json: Array(json.utf8), environments: ["staging", "production"], now: Self.now)
    }

    func pointers(_ json: String) -> [String] {
        do throws(InvalidFields) {
            _ = try spec(json)
            return []
        } catch {
            return error.errors.map(\.pointer)
        }
    }

    @Test func accountsDefaultToEveryAccountAndEnvironmentsToAll() throws {
        let spec = try spec(#"{"name": "dash", "scopes": ["read", "read"]}"#)
        #expect(spec.name == "dash")
        #expect(spec.scopes == [.read])
        #expect(spec.accounts == [.all])
        #expect(spec.environments == nil)
        #expect(spec.expiresAt == nil)
    }

    @Test func everyFieldIsReadWhenGiven() throws {
        let spec = try spec(
            #"{"name": "ci", "scopes": ["write", "deploy"], "accounts": ["jack", "shop-*"], "environments": ["staging"], "expiresAt": "2027-02-01T00:00:00+01:00"}"#
        )
        #expect(spec.scopes == [.write, .deploy])
        #expect(spec.accounts.map(\.description) == ["jack", "shop-*"])
        #expect(spec.environments == ["staging"])
        #expect(spec.expiresAt == RFC3339.date(from: "2027-01-31T23:00:00Z"))
    }

    @Test func badInputIsRefusedWithAPointerPerProblem() {
        #expect(pointers("[]") == [""])
        #expect(pointers("not json") == [""])
        #expect(pointers(#"{"scopes": ["read"]}"#) == ["/name"])
        #expect(pointers(#"{"name": "", "scopes": ["read"]}"#) == ["/name"])
        #expect(pointers(#"{"name": "\#(String(repeating: "n", count: 129))", "scopes": ["read"]}"#) == ["/name"])
        #expect(pointers(#"{"name": "\#(String(repeating: "n", count: 128))", "scopes": ["read"]}"#) == [])
        #expect(pointers(#"{"name": "a\nb", "scopes": ["read"]}"#) == ["/name"])
        #expect(pointers(#"{"name": "a\u0000", "scopes": ["read"]}"#) == ["/name"])
        #expect(pointers(#"{"name": "iOS CI · équipe", "scopes": ["read"]}"#) == [])
        #expect(pointers(#"{"name": "a"}"#) == ["/scopes"])
        #expect(pointers(#"{"name": "a", "scopes": []}"#) == ["/scopes"])
        #expect(pointers(#"{"name": "a", "scopes": ["read", "superuser", 3]}"#) == ["/scopes/1", "/scopes/2"])
        #expect(pointers(#"{"name": "a", "scopes": ["read"], "accounts": []}"#) == ["/accounts"])
        #expect(pointers(#"{"name": "a", "scopes": ["read"], "accounts": ["ok-*", "shop-[ab]", 7]}"#) == ["/accounts/1", "/accounts/2"])
        #expect(pointers(#"{"name": "a", "scopes": ["read"], "environments": ["staging", "qa"]}"#) == ["/environments/1"])
        #expect(pointers(#"{"name": "a", "scopes": ["read"], "environments": "staging"}"#) == ["/environments"])
        #expect(pointers(#"{"name": "a", "scopes": ["read"], "expiresAt": "2027-01-15T07:59:59Z"}"#) == ["/expiresAt"])
        #expect(pointers(#"{"name": "a", "scopes": ["read"], "expiresAt": "2027-01-15T08:00:00Z"}"#) == ["/expiresAt"])
        #expect(pointers(#"{"name": "a", "scopes": ["read"], "expiresAt": "next week"}"#) == ["/expiresAt"])
        #expect(pointers(#"{"name": "a", "scopes": ["read"], "expiresAt": null}"#) == [])
        #expect(pointers(#"{"name": "a", "scopes": ["read"], "sopes": ["x"], "a/b": 1}"#) == ["/a~1b", "/sopes"])
        #expect(pointers(#"{"name": 5, "scopes": "admin"}"#) == ["/name", "/scopes"])
    }

    @Test func anOverlapIsAnISO8601DurationOfAtMostSevenDays() throws {
        #expect(try RotationSpec(json: []).overlap == 0)
        #expect(try RotationSpec(json: Array("{}".utf8)).overlap == 0)
        #expect(try RotationSpec(json: Array(#"{"overlap": "PT1H"}"#.utf8)).overlap == 3600)
        #expect(try RotationSpec(json: Array(#"{"overlap": "P7D"}"#.utf8)).overlap == 7 * 86_400)
        #expect(try RotationSpec(json: Array(#"{"overlap": "P1W"}"#.utf8)).overlap == 7 * 86_400)
        for bad in [#"{"overlap": "P7DT1S"}"#, #"{"overlap": "P2W"}"#, #"{"overlap": "1h"}"#, #"{"overlap": 3600}"#, "[]"] {
            #expect(throws: InvalidFields.self, "\(bad)") { try RotationSpec(json: Array(bad.utf8)) }
        }
    }
}

@Suite struct TimeTextTests {
    @Test func rfc3339DateTimesAreReadWithOffsetsAndFractions() throws {
        let base = try #require(RFC3339.date(from: "2026-11-25T16:00:00Z"))
        #expect(base.timeIntervalSince1970 == 1_795_622_400)
        #expect(RFC3339.date(from: "2026-11-25t16:00:00z") == base)
        #expect(RFC3339.date(from: "2026-11-25T17:30:00+01:30") == base)
        #expect(RFC3339.date(from: "2026-11-25T15:00:00-01:00") == base)
        #expect(RFC3339.date(from: "2026-11-25T16:00:00.250Z") == base.addingTimeInterval(0.25))
        #expect(RFC3339.date(from: "2024-02-29T00:00:00Z") != nil)
        #expect(RFC3339.date(from: "1970-01-01T00:00:00Z")?.timeIntervalSince1970 == 0)
        #expect(RFC3339.string(from: base) == "2026-11-25T16:00:00Z")
        // Written in whole seconds, the fraction dropped (as Foundation's ISO 8601 style did).
        #expect(RFC3339.string(from: base.addingTimeInterval(-0.000_05)) == "2026-11-25T15:59:59Z")
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: -0.5)) == "1969-12-31T23:59:59Z")
    }

    @Test(arguments: [
        "", "2026-11-25", "2026-11-25T16:00:00", "2026-11-25 16:00:00Z", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z",
        "2026-11-31T00:00:00Z", "2026-11-25T24:00:00Z", "2026-11-25T16:60:00Z", "2026-11-25T16:00:60Z", "2026-11-25T16:00:00.Z",
        "2026-11-25T16:00:00+0100", "2026-11-25T16:00:00Z ", "26-11-25T16:00:00Z", "2026-11-25T16:00:00+24:00",
    ])
    func notRFC3339IsRefused(_ text: String) {
        #expect(RFC3339.date(from: text) == nil)
    }

    @Test func fixedLengthISO8601DurationsAreRead() {
        #expect(ISO8601Duration.seconds("PT10M") == 600)
        #expect(ISO8601Duration.seconds("PT1H30M") == 5400)
        #expect(ISO8601Duration.seconds("P1DT2H") == 93_600)
        #expect(ISO8601Duration.seconds("PT0.5S") == 0.5)
        #expect(ISO8601Duration.seconds("PT0S") == 0)
        #expect(ISO8601Duration.seconds("P2W") == 1_209_600)
        for bad in [
            "", "P", "PT", "P1DT", "PT1D", "P1H", "P1M", "P1Y", "PT1M1H", "PT1.5H", "pt1h", "PT-1H", "PT+1H", "PT1H ", "1H", "P1W1D",
        ] {
            #expect(ISO8601Duration.seconds(bad) == nil, "\(bad)")
        }
    }
}
