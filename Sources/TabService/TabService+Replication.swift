import Logging
import Synchronization
import TabDelivery
import TabLayout
import TabStore

extension TabService {
    /// Follows changes that other replicas commit to a shared store, so that every replica's snapshot
    /// converges (within the store's notification delay, and its periodic check as a safety net). Changes are
    /// applied one at a time, in the order announced: a refresh that read the store earlier never publishes after
    /// one that read it later (a rollout's older revision over a newer one, its events out of order).
    func followStoreChanges() {
        // Each change's refresh waits for the one before it.
        let latest = Mutex<Task<Void, Never>?>(nil)
        store.watch { [weak self] change in
            latest.withLock { previous in
                previous = Task { [previous] in
                    await previous?.value
                    await self?.refresh(after: change)
                }
            }
        }
    }

    /// Brings the snapshot up to date after `change`.
    func refresh(after change: StoreChange) async {
        do {
            switch change {
            case .layout(let account, let committed):
                metrics.noteReplicationLag(millis: clock.unixMillis - committed)
                try await refreshLayout(account)
            case .strings(let locale, let committed):
                metrics.noteReplicationLag(millis: clock.unixMillis - committed)
                try await refreshStrings(locale)
            case .promoted(let subject, let from, let to, let version, let author, let committed):
                metrics.noteReplicationLag(millis: clock.unixMillis - committed)
                let promotion = Promoted(from: from, to: to, version: version, author: author, atMillis: committed)
                switch subject {
                case .layout(let account): try await refreshLayout(account, promoted: promotion)
                case .strings(let locale): try await refreshStrings(locale, promoted: promotion)
                }
            case .rollout(let account, let committed):
                metrics.noteReplicationLag(millis: clock.unixMillis - committed)
                try await changes.loadRollouts(account: account)
            case .rolloutRecorded(let account, let environment, let id, let revision, let committed):
                metrics.noteReplicationLag(millis: clock.unixMillis - committed)
                // The change's lines of history become this replica's `event: rollout`s (and wake the account's
                // long-polls); a rollout that another one replaced since has no lines to give here.
                var announcing: (EnvironmentName, [ChangeEvent])?
                if let name = environmentList.names.first(where: { $0.text == environment }),
                    let (rollout, _) = try await store.latestRollout(account: account, environment: environment), rollout.id == id
                {
                    announcing = (name, changes.rolloutEvents(rollout, at: revision))
                }
                try await changes.loadRollouts(account: account, announcing: announcing)
            case .revocations(let account, let committed):
                metrics.noteReplicationLag(millis: clock.unixMillis - committed)
                try await changes.loadAnnouncedRevocations(account: account)
            case .token(let id, let committed):
                metrics.noteReplicationLag(millis: clock.unixMillis - committed)
                try await reloadTokens()
                logger.debug("tokens reloaded after a change to \(id) on another replica")
            case .everything:
                try await reloadTokens()
                try await catchUp()
                try await changes.loadRollouts()
                try await changes.loadRevocations()
            }
        } catch {
            metrics.storeErrors.add()
            logger.error("following a store change (\(change)) failed: \(error)")
        }
    }

    /// A promotion another replica announced.
    private typealias Promoted = (from: String, to: String, version: Int, author: String, atMillis: Int64)

    /// Serves what every environment points at for `account`; the version `promoted` moved `to` to is told as that
    /// promotion (`event: promote`), any other change as a layout's.
    private func refreshLayout(_ account: String, promoted promotion: Promoted? = nil) async throws {
        for environment in environmentList.names {
            guard let record = try await store.pointed(account: account, environment: environment.text) else { continue }
            if let promotion, promotion.to == environment.text, promotion.version == record.version {
                await changes.publishPromotion(
                    record, from: promotion.from, to: environment, author: promotion.author, atMillis: promotion.atMillis)
                continue
            }
            let document = record.deleted ? nil : try LayoutSource.parse(record.source, format: sourceFormat(record.contentType))
            await changes.commit(record, document: document, in: environment)
        }
    }

    /// Serves what every environment points at for the `locale` strings table, as ``refreshLayout(_:promoted:)`` does.
    private func refreshStrings(_ locale: String, promoted promotion: Promoted? = nil) async throws {
        for environment in environmentList.names {
            guard let record = try await store.pointedStrings(locale: locale, environment: environment.text) else { continue }
            let table = try StringsTable.read(record.source)
            if let promotion, promotion.to == environment.text, promotion.version == record.version {
                await changes.publishPromotion(
                    strings: record, table: table, from: promotion.from, to: environment, author: promotion.author,
                    atMillis: promotion.atMillis)
                continue
            }
            await changes.commit(strings: record, table: table, in: environment)
        }
    }

    /// A store call that passed its deadline may still commit, and a replica's listener skips its own commits
    /// (the publisher has them): read the store again once it had time to finish, so such a commit is served too.
    func catchUpLater(after seconds: Int = 5) {
        Task { [weak self] in
            try? await Task.sleep(for: .seconds(seconds))
            do { try await self?.catchUp() } catch { self?.logger.error("catching up after a store deadline failed: \(error)") }
        }
    }

    /// After notifications may have been missed: applies every record newer than the one held, and deletions of
    /// accounts held, one by one. A replica never goes back to an older state than it has published.
    func catchUp() async throws {
        var applied = 0
        for environment in environmentList.names {
            let held = changes.snapshot(for: environment)
            let layouts = try await store.currentLayouts(environment: environment.text)
            var seen: Set<String> = []
            for record in layouts {
                seen.insert(record.account)
                guard held.record(record.account)?.version != record.version else { continue }
                await changes.commit(
                    record, document: try? LayoutSource.parse(record.source, format: sourceFormat(record.contentType)), in: environment)
                applied += 1
            }
            for account in held.documents.keys where !seen.contains(account) {
                if let pointed = try await store.pointed(account: account, environment: environment.text), pointed.deleted {
                    await changes.commit(pointed, document: nil, in: environment)
                    applied += 1
                }
            }
        }
        for environment in environmentList.names {
            let held = changes.snapshot(for: environment)
            for record in try await store.currentStrings(environment: environment.text)
            where held.stringsRecords[record.locale]?.version != record.version {
                if let table = try? StringsTable.read(record.source) {
                    await changes.commit(strings: record, table: table, in: environment)
                    applied += 1
                }
            }
        }
        if applied > 0 { logger.info("caught up with the store: \(applied) changes applied") }
    }
}
