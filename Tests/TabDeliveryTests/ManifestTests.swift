import Testing

@testable import TabDelivery

/// The rollout part of `…/tabs/manifest`: the share now and the steps the clock will still make, with their times.
@Suite struct ManifestTests {
    static let start = Timestamp(unixMillis: 1_795_000_000_000)

    static func rollout(_ body: String, at now: Timestamp = start) throws -> Rollout {
        try RolloutFixture.start(body, at: now, id: 3).rollout
    }

    @Test func aSteppedRolloutListsTheStepsStillToComeThenTheCompletion() throws {
        let rollout = try Self.rollout(
            #"{"version": 5, "steps": [{"percent": 5, "hold": "PT10M"}, {"percent": 50, "hold": "PT1H"}], "seed": "s", "installs": ["qa-1"]}"#
        )
        let now = Self.start.adding(milliseconds: 60_000)
        let manifest = try #require(rollout.manifest(at: now))
        #expect(manifest.id == 3 && manifest.version == 5 && manifest.seed == "s" && manifest.installs == ["qa-1"])
        #expect(manifest.percent == Percent(basisPoints: 500))
        #expect(
            manifest.schedule == [
                .init(percent: Percent(basisPoints: 5000)!, at: Self.start.adding(milliseconds: 600_000).rfc3339),
                .init(percent: .all, at: Self.start.adding(milliseconds: 4_200_000).rfc3339),
            ])
        // Past the first hold, by the clock alone: one step left.
        let later = try #require(rollout.manifest(at: Self.start.adding(milliseconds: 700_000)))
        #expect(later.percent == Percent(basisPoints: 5000) && later.schedule.count == 1)
    }

    @Test func aFixedShareHasNoScheduleAndAnEndedRolloutNoManifest() throws {
        let fixed = try Self.rollout(#"{"version": 5, "percent": 10}"#)
        #expect(try #require(fixed.manifest(at: Self.start)).schedule.isEmpty)
        let rolledBack = try fixed.rolledBack(reason: nil, at: Self.start).rollout
        #expect(rolledBack.manifest(at: Self.start) == nil)
    }
}
