import TabDelivery

/// jack in production, pointing at version 3; versions 1–6 exist and version 4 records a deletion.
enum RolloutFixture {
    static let stable = Pointer(version: 3, etag: "\"v3\"")
    static let production = EnvironmentName.production
    /// The plan of docs/rollouts.md's example: 5 % for 10 minutes, 25 % for 30, 100 % for an hour.
    static let steps =
        #"{"version": 5, "steps": [{"percent": 5, "hold": "PT10M"}, {"percent": 25, "hold": "PT30M"}, {"percent": 100, "hold": "PT1H"}]}"#

    static func context(
        at now: Timestamp, id: Int = 1, current: Pointer? = stable, latest: Rollout? = nil,
        precondition: Precondition = .ifMatch([stable.etag])
    ) -> RolloutStartContext {
        RolloutStartContext(
            account: "jack", environment: production, id: id, current: current, latest: latest, precondition: precondition, now: now,
            availability: { version in
                switch version {
                case 4: .deleted
                case 1...6: .available
                default: .missing
                }
            })
    }

    static func start(_ json: String, at now: Timestamp, id: Int = 1) throws(RolloutError) -> RolloutChange {
        try Rollout.start(RolloutPlan.decode(bytes(json), now: now), in: context(at: now, id: id))
    }

    /// docs/rollouts.md's stepped rollout of version 5, started at `now`.
    static func running(at now: Timestamp) throws(RolloutError) -> Rollout {
        try start(steps, at: now).rollout
    }
}
