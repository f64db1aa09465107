import Foundation
import Testing

@testable import TabReview

@Suite struct HeldCommandTests {
    /// Every command, with the action a change request's record names it by (what releases before this one switch on).
    static let commands: [(HeldCommand, String)] = [
        (.layoutWrite(.put, draft: 4), "layout.put"),
        (.layoutWrite(.patch, draft: 5), "layout.patch"),
        (.layoutRestore(draft: 6), "layout.restore"),
        (.layoutDelete, "layout.delete"),
        (.promotion(body: #"{"from":"staging","to":"production"}"#), "layout.promote"),
        (.rolloutStart(body: #"{"version":3,"percent":10}"#), "rollout.start"),
        (.rolloutChange(.raise, body: #"{"percent":50}"#), "rollout.patch"),
        (.rolloutChange(.complete, body: ""), "rollout.complete"),
        (.stringsWrite(locale: "fr", contentType: "text/plain", body: "\"Home\" = \"Accueil\";"), "strings.put"),
        (.stringsPromotion(locale: "fr", body: #"{"from":"staging","to":"production"}"#), "strings.promote"),
        (.buildDeclare(build: "iphone/2.0", body: #"{"viewControllers":["HomeViewController"]}"#), "build.declare"),
        (.buildRetire(build: "android/1.4.2"), "build.retire"),
    ]

    @Test func everyCommandIsNamedByTheActionOlderReleasesKnow() {
        for (command, action) in Self.commands { #expect(command.action == action) }
        #expect(Set(Self.commands.map(\.1)).count == Self.commands.count, "each action names one command")
    }

    @Test(arguments: commands.map(\.0))
    func aCommandRoundTripsThroughItsEncoding(command: HeldCommand) throws {
        let encoded = try JSONEncoder().encode(command)
        #expect(try JSONDecoder().decode(HeldCommand.self, from: encoded) == command)
        #expect(try HeldCommand(command.fields) == command)
    }

    @Test(arguments: commands.map(\.0))
    func aCommandRoundTripsThroughAChangeRequestsRecord(command: HeldCommand) throws {
        let request = ChangeRequest(
            id: "cr_1", author: "alice", createdAtMillis: 1_000, environment: "production", account: "jack", command: command, version: 9,
            ifMatch: nil, required: 1, applyAtMillis: nil)
        let read = try #require(ChangeRequest(json: request.json))
        #expect(read == request)
        #expect(try read.command == command)
        #expect(read.action == command.action)
        #expect(read.version == (command.draft ?? 9), "a layout write's version is its draft; the others show the version given")
    }

    /// A record as the release before this one wrote it (by hand, keys sorted) reads as its command.
    @Test func aRecordOfThePreviousReleaseReadsAsItsCommand() throws {
        let record = #"""
            {"account":"","action":"strings.put","approvals":[],"author":"alice","body":"\"Home\" = \"Accueil\";",\#
            "contentType":"text/plain; charset=utf-8","createdAtMillis":1000,"environment":"production","id":"cr_0123456789abcdef",\#
            "locale":"fr","required":1,"state":"open","updatedAtMillis":1000}
            """#
        let request = try #require(ChangeRequest(json: Array(record.utf8)))
        #expect(
            try request.command
                == .stringsWrite(locale: "fr", contentType: "text/plain; charset=utf-8", body: #""Home" = "Accueil";"#))
        let promotion = try #require(
            ChangeRequest(
                json: Array(
                    #"{"account":"jack","action":"layout.promote","approvals":[],"author":"alice","createdAtMillis":1,"environment":"production","id":"cr_1","required":1,"state":"open","updatedAtMillis":1}"#
                        .utf8)))
        #expect(try promotion.command == .promotion(body: ""), "a missing body reads as empty, as it was replayed")
    }

    /// The record a command's request is stored as is the one the previous release built for that change (its
    /// handlers set these fields by hand), so a replica of that release applies it the same way.
    @Test func aRequestIsStoredAsThePreviousReleaseStoredIt() {
        func previous(
            _ action: String, version: Int?, body: String? = nil, locale: String? = nil, contentType: String? = nil, build: String? = nil
        )
            -> ChangeRequest
        {
            ChangeRequest(
                id: "cr_1", author: "alice", createdAtMillis: 1_000, environment: "production", account: "jack", action: action,
                version: version, ifMatch: ["\"e\""], required: 2, applyAtMillis: 5_000, body: body, locale: locale,
                contentType: contentType,
                build: build)
        }
        let cases: [(HeldCommand, Int?, ChangeRequest)] = [
            (.layoutWrite(.put, draft: 4), nil, previous("layout.put", version: 4)),
            (.layoutRestore(draft: 6), nil, previous("layout.restore", version: 6)),
            (.layoutDelete, nil, previous("layout.delete", version: nil)),
            (.promotion(body: "{}"), 3, previous("layout.promote", version: 3, body: "{}")),
            (.rolloutChange(.complete, body: ""), 3, previous("rollout.complete", version: 3, body: "")),
            (
                .stringsWrite(locale: "fr", contentType: "text/plain", body: "x"), nil,
                previous("strings.put", version: nil, body: "x", locale: "fr", contentType: "text/plain")
            ),
            (
                .stringsPromotion(locale: "fr", body: "{}"), nil,
                previous("strings.promote", version: nil, body: "{}", locale: "fr", contentType: "application/json")
            ),
            (.buildDeclare(build: "iphone/2.0", body: "{}"), nil, previous("build.declare", version: nil, body: "{}", build: "iphone/2.0")),
            (.buildRetire(build: "iphone/2.0"), nil, previous("build.retire", version: nil, build: "iphone/2.0")),
        ]
        for (command, version, expected) in cases {
            let request = ChangeRequest(
                id: "cr_1", author: "alice", createdAtMillis: 1_000, environment: "production", account: "jack", command: command,
                version: version, ifMatch: ["\"e\""], required: 2, applyAtMillis: 5_000)
            #expect(request.json == expected.json, "\(command.action)")
        }
    }

    @Test func anUnknownActionIsNeverGuessed() throws {
        let request = ChangeRequest(
            id: "cr_1", author: "alice", createdAtMillis: 1_000, environment: "production", account: "jack", action: "layout.teleport",
            version: 4, ifMatch: nil, required: 1, applyAtMillis: nil)
        let read = try #require(ChangeRequest(json: request.json), "the request still reads, so that it can be failed")
        #expect(throws: HeldCommandError.unknown("layout.teleport")) { try read.command }
        #expect(HeldCommandError.unknown("layout.teleport").description.contains("\"layout.teleport\""))
        #expect(throws: HeldCommandError.unknown("layout.teleport")) {
            try JSONDecoder().decode(HeldCommand.self, from: Data(#"{"action":"layout.teleport","version":4}"#.utf8))
        }
    }

    @Test func aCommandMissingAFieldItNeedsIsNotRun() {
        #expect(throws: HeldCommandError.missing(action: "layout.put", field: "version")) {
            try HeldCommand(HeldCommand.Fields(action: "layout.put"))
        }
        #expect(throws: HeldCommandError.missing(action: "strings.promote", field: "locale")) {
            try HeldCommand(HeldCommand.Fields(action: "strings.promote", body: "{}"))
        }
        #expect(throws: HeldCommandError.missing(action: "build.retire", field: "build")) {
            try HeldCommand(HeldCommand.Fields(action: "build.retire"))
        }
    }

    @Test func onlyALayoutsOwnChangesWereSentWithIfNoneMatchWhenTheyHadNoIfMatch() {
        let layout = Self.commands.map(\.0).filter(\.isLayoutChange).map(\.action)
        #expect(layout == ["layout.put", "layout.patch", "layout.restore", "layout.delete"])
    }
}
