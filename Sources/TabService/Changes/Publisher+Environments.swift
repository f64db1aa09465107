import TabDelivery

/// One publication holds every environment's snapshot: the served environment's at the top, holding the others'.
extension Publisher {
    /// The snapshot of `environment` (the top one for `served`, else the one it holds).
    func snapshot(for environment: EnvironmentName, served: EnvironmentName) -> Snapshot {
        let top = snapshot
        return environment == served ? top : top.environment(environment.text)
    }

    /// Publishes a change to one environment's snapshot (see ``publish(_:)``), its events named for that environment.
    @discardableResult
    func publish(
        in environment: EnvironmentName, served: EnvironmentName, _ change: @escaping @Sendable (Snapshot) -> (Snapshot, [ChangeEvent])?
    ) async -> Snapshot {
        @Sendable func named(_ events: [ChangeEvent]) -> [ChangeEvent] {
            events.map { event in
                var event = event
                event.environment = environment.text
                return event
            }
        }
        return await publish { top in
            if environment == served { return change(top).map { ($0.0, named($0.1)) } }
            guard let inner = top.contents.environments[environment.text], let (next, events) = change(inner) else { return nil }
            return (top.replacing(environment: environment.text, with: next), named(events))
        }
    }
}
