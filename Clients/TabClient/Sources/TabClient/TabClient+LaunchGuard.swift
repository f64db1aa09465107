import Foundation

/// The launch guard (``GuardRecord``): undoes on the phone a layout that breaks the app before it can reach the network
/// again, and drops the versions the server revokes.
extension TabClient {
    /// Tells the client that ``current`` is on screen: the app's initial tab's root view controller appeared (the first
    /// frame of the selected destination on Android). Until then a layout newly shown from the network, a prefetch or a
    /// switch is *pending*: ``TabClientConfiguration/launchAttempts`` launches in a row that end before this call, or
    /// ``TabClientConfiguration/readyTimeout`` in one run, send the client back to the last layout that rendered (else the
    /// bundle) and block that version. Call it once the tab bar is drawn, from any thread; calling it again is harmless.
    /// Never call it before the tab bar is on screen, nor from a crash handler.
    public func markRendered() {
        if let version = current.version { queueReport(version: version, kind: "rendered") }
        readyTimer.withLock { timer in
            timer?.cancel()
            timer = nil
        }
        storing.withLock { _ in
            state.withLock { state in
                state.pendingSince = nil
                state.fallback = nil
            }
            let next = record.withLock { record -> GuardRecord? in
                guard record.pending != nil else { return nil }
                record.pending = nil
                record.launches = nil
                return record
            }
            if let next { try? cache?.storeGuard(next) }
        }
    }

    /// Whether ``current`` waits for ``markRendered()``.
    public var isPendingRender: Bool { state.withLock { $0.pendingSince != nil } }

    /// The versions the launch guard blocked (oldest first, at most 32), kept in the cache file.
    public var blockedVersions: [Int] { record.withLock { $0.blocked ?? [] } }

    /// The versions the server said are revoked (its newest list).
    public var revokedVersions: [Int] { record.withLock { $0.revoked ?? [] } }

    /// Whether the launch guard watches `layout` when it is newly shown: it is on, and `layout` is not the bundle's version
    /// (the floor is never undone).
    func guarding(_ layout: CompiledLayout) -> Bool {
        guard configuration.launchAttempts > 0 || configuration.readyTimeout > .zero, let version = layout.version else {
            return false
        }
        return !(layout.layout == floor.layout.layout && version == floor.layout.version)
    }

    /// `layout` is about to be shown in place of `current` (with `storing` held, before it is stored): records it as
    /// pending, so that the cache file written next says so. Returns the layout to go back to: `current` when it rendered,
    /// else the one it would have gone back to.
    func beginPending(_ layout: CompiledLayout, replacing current: State) -> Fallback? {
        let fallback =
            current.pendingSince == nil
            ? (current.source == .bundle ? nil : Fallback(layout: current.layout, validators: current.validators, source: current.source))
            : current.fallback
        if let cache {
            let rendered =
                current.pendingSince == nil && current.source != .bundle && current.stored.map(current.validators.contains) == true
            if !(guarding(layout) && configuration.launchAttempts > 0) {
                cache.previous.withLock { $0 = nil }
            } else if current.pendingSince == nil {
                // The file holds the layout that rendered: kept as "previous" in the one written next.
                let entry = rendered ? cache.entryBytes() : nil
                cache.previous.withLock { $0 = entry }
            }
        }
        record.withLock { record in
            if guarding(layout), configuration.launchAttempts > 0 {
                record.pending = layout.version
                record.launches = 1
            } else {
                record.pending = nil
                record.launches = nil
            }
        }
        return fallback
    }

    /// Starts (again) the wait for ``TabClientConfiguration/readyTimeout`` of the pending layout, by the device's clock.
    func startReadyTimer() {
        guard configuration.readyTimeout > .zero, let since = state.withLock({ $0.pendingSince }) else { return }
        let deadline = since.addingTimeInterval(configuration.readyTimeout.timeInterval)
        let clock = configuration.clock
        let task = Task { [weak self] in
            do {
                try await clock.sleep(until: deadline)
            } catch {
                return
            }
            self?.checkReady()
        }
        readyTimer.withLock { timer in
            timer?.cancel()
            timer = task
        }
    }

    /// Reverts the pending layout when ``TabClientConfiguration/readyTimeout`` has passed by the device's clock.
    func checkReady() {
        guard configuration.readyTimeout > .zero,
            let (since, version) = state.withLock({ state in state.pendingSince.map { ($0, state.layout.version) } }), let version,
            configuration.clock.now >= since.addingTimeInterval(configuration.readyTimeout.timeInterval)
        else { return }
        revert(version, reason: "readyTimeout")
    }

    /// Goes back from the pending `version` to the last layout that rendered, else the bundle; blocks it. What it goes
    /// back to is not pending: a revert never starts another.
    func revert(_ version: Int, reason: String) {
        let shown = storing.withLock { _ -> LayoutReference? in
            let current = state.withLock { $0 }
            guard current.pendingSince != nil, current.layout.version == version else { return nil }
            let next = record.withLock { record in
                record.pending = nil
                record.launches = nil
                record.block(version)
                return record
            }
            // The file goes back with the layout shown: the last one that rendered when it kept it, else nothing (the bundle).
            if let cache, current.fallback != nil, let previous = cache.previous.withLock({ $0 }),
                (try? cache.restore(previous, record: next)) != nil
            {
                cache.previous.withLock { $0 = nil }
            } else {
                cache?.previous.withLock { $0 = nil }
                try? cache?.storeGuard(next, dropLayout: true)
            }
            return show(current.fallback ?? floor)
        }
        guard let shown else { return }
        queueReport(version: version, kind: "reverted", reason: reason)
        configuration.onEvent?(.reverted(version: version, reason: reason, shown: shown))
    }

    /// Makes `fallback` current, not pending (with `storing` held). Returns it.
    private func show(_ fallback: Fallback) -> LayoutReference {
        state.withLock { state in
            state.layout = fallback.layout
            state.validators = fallback.validators
            state.source = fallback.source
            state.stored = nil
            state.perInstall = false
            state.pendingSince = nil
            state.fallback = nil
            return state.reference
        }
    }

    /// The server's newest list of revoked versions (a manifest's `revoked`, a `Tabs-Revoked` header): kept, and a version
    /// of it shown or prefetched is dropped at once (the one shown for the last layout that rendered, else the bundle), each a
    /// ``TabClientEvent/revoked(version:shown:)``.
    func learnRevoked(_ versions: [Int]) { revoke { $0.setRevoked(versions) } }

    /// `…/tabs?version=N` (a manifest's choice or a prefetch) answered `410 Gone`: `version` is revoked, learnt as a list
    /// naming it would be (kept, dropped at once when shown or prefetched, never asked for again), and a
    /// ``TabClientEvent/revoked(version:shown:)`` says so even when it was not shown. Returns the layout shown now.
    func learnGone(_ version: Int) -> LayoutReference {
        revoke(asked: version) { $0.markGone(version) }
        return reference
    }

    /// Applies `change` to the revoked list; when it changed, drops what it now refuses that is shown or prefetched (the one
    /// shown for the last layout that rendered, else the bundle), and reports each version dropped, and `asked` (the version
    /// a request was for), with a ``TabClientEvent/revoked(version:shown:)``.
    private func revoke(asked: Int? = nil, _ change: (inout GuardRecord) -> Bool) {
        let dropped = storing.withLock { _ -> [(Int, LayoutReference)] in
            let next = record.withLock { record -> GuardRecord? in change(&record) ? record : nil }
            guard let next else { return [] }
            var dropped: [(Int, LayoutReference)] = []
            let current = state.withLock { $0 }
            if let pending = current.pending, let version = pending.layout.version, next.refuses(version) {
                state.withLock { $0.pending = nil }
                prefetchCache?.remove()
                dropped.append((version, current.reference))
            }
            if let version = current.layout.version, current.source != .bundle, next.refuses(version) {
                var cleared = next
                if cleared.pending == version {
                    cleared.pending = nil
                    cleared.launches = nil
                    record.withLock { $0 = cleared }
                }
                try? cache?.storeGuard(cleared, dropLayout: true)
                let back = current.fallback.flatMap { next.refuses($0.layout.version) ? nil : $0 } ?? floor
                dropped.append((version, show(back)))
                readyTimer.withLock { timer in
                    timer?.cancel()
                    timer = nil
                }
            } else {
                try? cache?.storeGuard(next)
            }
            if let asked, next.refuses(asked), !dropped.contains(where: { $0.0 == asked }) {
                dropped.append((asked, state.withLock { $0.reference }))
            }
            return dropped
        }
        for (version, shown) in dropped { configuration.onEvent?(.revoked(version: version, shown: shown)) }
    }
}
