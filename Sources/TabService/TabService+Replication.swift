import Logging
import TabLayout
import TabStore

extension TabService {
    /// Follows changes that other replicas commit to a shared store, so that every replica's snapshot
    /// converges (within the store's notification delay, and its periodic check as a safety net).
    func followStoreChanges() {
        store.watch { [weak self] change in
            guard let self else { return }
            Task { await self.refresh(after: change) }
        }
    }

    /// Brings the snapshot up to date after `change`.
    func refresh(after change: StoreChange) async {
        do {
            switch change {
            case .layout(let account, let committed):
                metrics.noteReplicationLag(millis: currentTimeMillis() - committed)
                guard let record = try await store.latest(account: account) else { return }
                if record.deleted {
                    commit(record, document: nil)
                } else {
                    commit(record, document: try? LayoutSource.parse(record.source, format: sourceFormat(record.contentType)))
                }
            case .strings(let locale, let committed):
                metrics.noteReplicationLag(millis: currentTimeMillis() - committed)
                guard let record = try await store.currentStrings().first(where: { $0.locale == locale }),
                    let table = try? StringsTable.read(record.source)
                else { return }
                let logger = self.logger
                current.withLock { $0 = $0.applying(strings: record, table: table, logger: logger) }
            case .everything:
                let layouts = try await store.currentLayouts()
                let strings = try await store.currentStrings()
                let rebuilt = Snapshot.build(layouts: layouts, strings: strings, budget: budget, logger: logger)
                current.withLock { $0 = rebuilt }
                logger.info("snapshot rebuilt from the store: \(rebuilt.entries.count) layouts")
            }
        } catch {
            metrics.storeErrors.add()
            logger.error("following a store change (\(change)) failed: \(error)")
        }
    }
}
