import Logging
import TabStore

@testable import TabService

extension ServiceParts {
    /// The parts over `store` serving no layout at first, made without reading the store: for a harness of collections
    /// that read no snapshot (access, webhooks, a probe).
    package static func withoutLayouts(store: any TabStore, configuration: ServiceConfiguration, logger: Logger) -> ServiceParts {
        let budget = VariantBudget(limit: configuration.variantCacheBytes)
        return ServiceParts(
            store: store, configuration: configuration, logger: logger, budget: budget,
            firstSnapshot: Snapshot.build(layouts: [], strings: [], budget: budget, logger: logger))
    }
}
