import Logging
import TabDelivery
import TabStore

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

extension Snapshot {
    /// The first publication: every current layout and strings table of every environment in `store`, compiled.
    /// One snapshot per environment, published as one (the served environment's holds the others'): a change in any
    /// environment is one publication, with one sequence number for long-polls and the change feed.
    /// - Throws: ``StoreError`` when the store cannot be read.
    static func load(from store: any TabStore, environments: EnvironmentList, budget: VariantBudget, logger: Logger)
        async throws(StoreError) -> Snapshot
    {
        let vary = environments.isDefault ? nil : "Tabs-Environment"
        var served = Snapshot.build(
            layouts: try await store.currentLayouts(environment: environments.served.text),
            strings: try await store.currentStrings(environment: environments.served.text), budget: budget, logger: logger, vary: vary)
        for name in environments.names where name != environments.served {
            let layouts = try await store.currentLayouts(environment: name.text)
            let strings = try await store.currentStrings(environment: name.text)
            served = served.replacing(
                environment: name.text, with: Snapshot.build(layouts: layouts, strings: strings, budget: budget, logger: logger, vary: vary)
            )
        }
        return served
    }
}
