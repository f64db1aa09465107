import Foundation
import Testing

@testable import TabClient

/// A rollback reaches the installs that had the candidate: while a rollout runs the server's answers `Vary` on
/// `X-Install-Id` (docs/rollouts.md); when the layout shown came in such an answer and a lower version comes in one that does
/// not, the rollout ended and the lower version is the stable one, not a lagging replica's. Against a scripted
/// responder on a real socket.
@Suite struct RolloutArmTests {
    static let rolloutVary = ("Vary", "Accept, Accept-Language, Accept-Encoding, X-Install-Id")
    static let plainVary = ("Vary", "Accept, Accept-Language, Accept-Encoding")

    /// One answer: jack's layout at `version`, its ETag, and whether it is one arm of a running rollout.
    struct Answer: Sendable {
        var layout: CompiledLayout
        var body: Data
        var etag: String
        var perInstall: Bool

        init(version: Int, perInstall: Bool) throws {
            layout = try OlderAnswerTests.jack(version: version).layout
            body = try JSONEncoder().encode(layout)
            etag = "\"v\(version)\(perInstall ? "-arm" : "")\""
            self.perInstall = perInstall
        }

        var reply: RawHTTPResponder.Reply {
            .respond(
                status: 200, headers: [("Content-Type", "application/json"), ("ETag", etag), perInstall ? rolloutVary : plainVary],
                body: body)
        }
    }

    static func responder(_ answers: [Answer]) throws -> RawHTTPResponder {
        try RawHTTPResponder { answers[min($0, answers.count - 1)].reply }
    }

    @Test func aRollbackGivesTheCandidatesInstallsTheLowerStableVersion() async throws {
        let candidate = try Answer(version: 6, perInstall: true)
        let stable = try Answer(version: 5, perInstall: false)
        let responder = try Self.responder([candidate, stable])
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let client = try TabClient(
            configuration: Fixtures.configuration(server: responder.url, cache: cache), bundle: try Fixtures.jackBundle())
        #expect(try await client.refresh() == .updated(candidate.layout))
        // Rolled back: everyone gets v5, and the answer no longer varies by install.
        #expect(try await client.refresh() == .updated(stable.layout))
        #expect(client.current == stable.layout && client.validators == [stable.etag])
        // And it is what the next launch shows.
        let refusing = try RefusingPort()
        let relaunched = try TabClient(
            configuration: Fixtures.configuration(server: refusing.url, cache: cache), bundle: try Fixtures.jackBundle())
        #expect(relaunched.source == .cache && relaunched.current == stable.layout)
        withExtendedLifetime(refusing) {}
    }

    @Test func aRelaunchFromACachedCandidateTakesTheStableVersionAfterARollback() async throws {
        let candidate = try Answer(version: 6, perInstall: true)
        let stable = try Answer(version: 5, perInstall: false)
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let before = try Self.responder([candidate])
        let earlier = try TabClient(
            configuration: Fixtures.configuration(server: before.url, cache: cache), bundle: try Fixtures.jackBundle())
        #expect(try await earlier.refresh() == .updated(candidate.layout))
        earlier.markRendered()  // as the app does once it is on screen: no guard record left in the file
        let file = try String(contentsOf: cache.appendingPathComponent("jack.tabs.json"), encoding: .utf8)
        #expect(file.hasPrefix(#"{"etag":"\"v6-arm\"","perInstall":true,"layout":{"#))

        let after = try Self.responder([stable])
        let relaunched = try TabClient(
            configuration: Fixtures.configuration(server: after.url, cache: cache), bundle: try Fixtures.jackBundle())
        #expect(relaunched.source == .cache && relaunched.current == candidate.layout)
        #expect(try await relaunched.refresh() == .updated(stable.layout))
    }

    @Test func aLowerVersionWhileTheRolloutRunsIsALaggingReplicaAndIsDropped() async throws {
        // The share only grows: an install that got the candidate keeps it, so a lower arm is a replica behind.
        let candidate = try Answer(version: 6, perInstall: true)
        let laggingArm = try Answer(version: 5, perInstall: true)
        let responder = try Self.responder([candidate, laggingArm])
        let client = try TabClient(configuration: Fixtures.configuration(server: responder.url), bundle: try Fixtures.jackBundle())
        #expect(try await client.refresh() == .updated(candidate.layout))
        guard case .droppedOlder = try await client.refresh() else {
            Issue.record("the lagging arm was taken")
            return
        }
        #expect(client.current == candidate.layout)
    }

    @Test func aLowerVersionAfterAnOrdinaryAnswerIsStillDropped() async throws {
        let newer = try Answer(version: 6, perInstall: false)
        let older = try Answer(version: 5, perInstall: false)
        let responder = try Self.responder([newer, older])
        let client = try TabClient(configuration: Fixtures.configuration(server: responder.url), bundle: try Fixtures.jackBundle())
        #expect(try await client.refresh() == .updated(newer.layout))
        guard case .droppedOlder = try await client.refresh() else {
            Issue.record("the older version was taken")
            return
        }
        #expect(client.current == newer.layout)
    }

    @Test func aNotModifiedLeavesTheArmAsItWas() async throws {
        // A 304 is not signed: whatever its Vary says, the layout shown stays one arm, so the stable version after it
        // (no Vary on the install) is a rollback's and is taken.
        let candidate = try Answer(version: 6, perInstall: true)
        let stable = try Answer(version: 5, perInstall: false)
        let replies: [RawHTTPResponder.Reply] = [
            candidate.reply, .respond(status: 304, headers: [("ETag", candidate.etag), Self.plainVary]), stable.reply,
        ]
        let responder = try RawHTTPResponder { replies[min($0, replies.count - 1)] }
        let client = try TabClient(configuration: Fixtures.configuration(server: responder.url), bundle: try Fixtures.jackBundle())
        #expect(try await client.refresh() == .updated(candidate.layout))
        #expect(try await client.refresh() == .notModified)
        #expect(try await client.refresh() == .updated(stable.layout))
    }
}
