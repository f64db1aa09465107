import ContentHash
import Foundation
import HeaderFields
import MicroHTTPD
import Synchronization
import TabDelivery
import TabJSON
import TabLayout
import TabSigning

/// One account's `…/tabs/manifest` in one environment (docs/rollouts.md, "Manifest mode"): the same bytes for every
/// install, so that a shared cache keeps one copy.
struct Manifest: Sendable {
    let body: [UInt8]
    let etag: String
    /// When the clock alone changes it next (a rollout's next step), nil when nothing is scheduled.
    let nextChange: Timestamp?
    /// The layout that serves the account (its own, or `default`), whose changes wake its long-polls.
    let owner: String
    /// `Surrogate-Key` and `Cache-Tag` naming its keys (``CacheKeys/current(account:owner:environment:)``).
    let cacheHeaders: [HTTPHeader]

    /// `{"account", "environment", "layout", "revision", "stable": {"version"}, "rollout": null | {…}, "revoked"?: [n…]}`, keys
    /// sorted; `revoked` (the layout's newest revoked versions, ascending) only when there are any.
    struct Body: Encodable {
        struct Stable: Encodable { var version: Int }
        var account, environment, layout: String
        var revision: Int64
        var stable: Stable
        @NullWhenAbsent var rollout: ManifestRollout?
        /// Nil when the layout has no revoked version (the key is left out).
        var revoked: [Int]?
    }

    /// The manifest of `account` in `snapshot` (one environment's) at `now`; nil when nothing serves it.
    /// `revision` is the newest millisecond among the serving layout's records, the rollout's recorded changes (those
    /// of a rollout that ended too) and the step the clock has reached: it grows with every change of the manifest.
    static func make(account: String, environment: String, snapshot: Snapshot, at now: Timestamp) -> Manifest? {
        guard let entry = snapshot.entry(for: account) else { return nil }
        let owner = entry.resolved.name
        let rollout = snapshot.contents.rollouts[owner]?.rollout
        let part = rollout?.manifest(at: now)
        var revision = entry.layoutModifiedMillis
        if let rollout { revision = max(revision, rollout.manifestChangedAt(now).unixMillis) }
        // A rollout that ended (rolled back, or completed onto a draft older than it) leaves its time behind.
        revision = max(revision, snapshot.contents.rolloutChangedMillis[owner] ?? 0)
        // A revoke or an un-revoke changes the manifest too (the row of an un-revoke keeps its time).
        let revoked = snapshot.revoked(owner)
        revision = max(revision, revoked?.changedMillis ?? 0)
        let stable = rollout.map(\.stableVersion) ?? snapshot.record(owner)?.version ?? entry.resolved.version ?? 0
        let listed = revoked?.listed ?? []
        let body = Body(
            account: account, environment: environment, layout: owner, revision: revision, stable: Body.Stable(version: stable),
            rollout: part, revoked: listed.isEmpty ? nil : listed)
        // Strings, integers and decimals only: encoding cannot fail.
        let bytes = Array(try! JSONEncoder.sorted.encode(body))
        let next = rollout.flatMap { $0.progress.ending == nil ? $0.status(at: now).nextChangeAt : nil }
        return Manifest(
            body: bytes, etag: EntityTag.strong(for: bytes), nextChange: next, owner: owner,
            cacheHeaders: CacheKeys.headers(CacheKeys.current(account: account, owner: owner, environment: environment)))
    }
}

/// One manifest kept for a snapshot, with what every answer of it shares: its parsed tag, its signature and its
/// shared responses, each made once.
final class KeptManifest: Sendable {
    let sequence: UInt64
    let manifest: Manifest
    /// `manifest.etag` parsed once, for `If-None-Match`.
    let entityTag: HeaderFields.EntityTag?

    private struct Made {
        var signature: String?
        var responses: [String: PreparedResponse] = [:]
    }

    private let made = Mutex(Made())

    init(sequence: UInt64, manifest: Manifest) {
        self.sequence = sequence
        self.manifest = manifest
        entityTag = HeaderFields.EntityTag(manifest.etag)
    }

    /// The `Tabs-Signature` of the manifest for `account` in `environment`, made once.
    func signature(account: String, environment: String, signer: Signer) -> String {
        if let known = made.withLock({ $0.signature }) { return known }
        let signature = signer.header(kind: .manifest, account: account, environment: environment, body: manifest.body)
        made.withLock { $0.signature = signature }
        return signature
    }

    /// The shared response `make` builds for header fields named `key` (a status and a `Cache-Control`), made once
    /// (at most eight kept), so that a manifest's answer costs what `…/tabs`' does.
    func prepared(_ key: String, make: () -> PreparedResponse?) -> PreparedResponse? {
        if let known = made.withLock({ $0.responses[key] }) { return known }
        guard let response = make() else { return nil }
        made.withLock { made in
            if made.responses.count >= 8 { made.responses = [:] }
            made.responses[key] = response
        }
        return response
    }
}

/// Manifests made for a snapshot, reused until the next publication or their next scheduled change, so that a 304
/// costs a lookup. An account with a layout of its own keeps its manifest (one per account and environment: as many
/// as the store has layouts, and past ``ownLimit`` it starts over). The accounts served `default`'s layout, whose names
/// any client may make up, keep at most ``fallbackLimit`` manifests, those asked for recently (see ``RecentlyUsed``):
/// each names its account and is signed for it, so one that went is made again when asked for.
final class ManifestMemo: Sendable {
    private struct Kept {
        var own: [String: KeptManifest] = [:]
        var fallback: RecentlyUsed<KeptManifest>
    }

    private let kept: Mutex<Kept>
    /// Manifests kept at most for accounts served `default`'s layout (`--max-fallback-manifests`).
    let fallbackLimit: Int
    /// The default of ``fallbackLimit``: ~3 KiB each with its signature and shared answers, ~30 MiB at most.
    static let defaultFallbackLimit = 10_000
    /// Manifests kept at most for accounts with a layout of their own (and `default`), a bound the store's layouts set.
    static let ownLimit = 100_000

    init(fallbackLimit: Int = ManifestMemo.defaultFallbackLimit) {
        self.fallbackLimit = fallbackLimit
        kept = Mutex(Kept(fallback: RecentlyUsed(limit: fallbackLimit)))
    }

    /// Manifests kept now, of accounts with a layout of their own and of accounts served `default`'s.
    var count: (own: Int, fallback: Int) { kept.withLock { ($0.own.count, $0.fallback.count) } }

    /// The manifest of `account` in `environment` at `now`, made when none is kept for `sequence`.
    func manifest(account: String, environment: String, snapshot: Snapshot, at now: Timestamp) -> KeptManifest? {
        let key = environment + "\n" + account
        let sequence = snapshot.sequence
        if let hit = kept.withLock({ $0.own[key] ?? $0.fallback.value(for: key) }), hit.sequence == sequence,
            hit.manifest.nextChange.map({ now < $0 }) ?? true
        {
            return hit
        }
        guard let made = Manifest.make(account: account, environment: environment, snapshot: snapshot, at: now) else {
            kept.withLock { kept in
                kept.own[key] = nil
                kept.fallback.remove(key)
            }
            return nil
        }
        let fresh = KeptManifest(sequence: sequence, manifest: made)
        kept.withLock { kept in
            // An account that gained or lost a layout of its own moves between the two.
            if made.owner == account {
                kept.fallback.remove(key)
                if kept.own.count >= Self.ownLimit { kept.own = [:] }
                kept.own[key] = fresh
            } else {
                kept.own[key] = nil
                kept.fallback.insert(fresh, for: key)
            }
        }
        return fresh
    }
}

extension ClientPlaneRoutes {
    /// `GET|HEAD /v1/accounts/{account}/tabs/manifest`: the same bytes for every install, `public, max-age` never
    /// beyond the next step, signed when the service signs, and held like `…/tabs` with `?wait=` while current.
    /// - Throws: 404 for an environment or a layout there is none of.
    func serveManifest(_ request: borrowing HTTPRequest, _ inputs: ClientInputs) throws(Problem) -> HTTPReply {
        let account = inputs.account
        let environment = try self.environment(inputs)
        let wait = inputs.wait?.seconds.map { min($0, maxWaitSeconds) }
        let published = publisher.snapshot
        let now = clock.now
        guard let kept = manifests.manifest(account: account, environment: environment.text, snapshot: snapshot(for: environment), at: now)
        else { throw Problem.noLayout(account) }
        let manifest = kept.manifest
        let current =
            kept.entityTag.map { tag in
                request.withCombinedHeader("If-None-Match") { field in
                    field.map { EntityTagList.matchesWeakly(CollectionOfOne($0), current: tag) } ?? false
                }
            } ?? false
        guard current, let wait else {
            let answer = {
                self.manifestResponse(kept, current: current, account: account, environment: environment, longPoll: wait != nil)
            }
            // Shared once made while `Cache-Control` is the configured one (not within `max-age` of a step).
            let steady =
                manifest.nextChange.map { $0.unixMillis - now.unixMillis >= Int64(manifestMaxAgeSeconds) * 1000 } ?? true
            guard wait == nil, steady,
                let shared = kept.prepared(
                    current ? "304" : "200",
                    make: {
                        let made = answer()
                        return try? PreparedResponse(status: made.status, headers: made.headers, body: made.body)
                    })
            else { return .response(answer()) }
            return .prepared(shared)
        }
        let address = addresses.address(of: request)
        if let refusal = heldBudget.reserve(address) {
            throw heldBudget.problem(refusal)
        }
        let deadline = ContinuousClock.now + .seconds(wait)
        return .deferred {
            defer { self.heldBudget.release(address) }
            var seen = published.sequence
            var held = manifest
            while true {
                var until = deadline
                if let next = held.nextChange {
                    until = min(deadline, ContinuousClock.now + .milliseconds(max(0, next.unixMillis - clock.unixMillis)))
                }
                let wake = await self.publisher.waiters.wait(account: account, after: seen, until: until)
                seen = self.publisher.snapshot.sequence
                guard
                    let latest = self.manifests.manifest(
                        account: account, environment: environment.text, snapshot: self.snapshot(for: environment), at: self.clock.now)
                else { return Problem.noLayout(account).response }
                let changed = latest.manifest.etag != manifest.etag
                if changed || wake == .stopping || ContinuousClock.now >= deadline {
                    return self.manifestResponse(latest, current: !changed, account: account, environment: environment, longPoll: true)
                }
                held = latest.manifest
            }
        }
    }

    /// A manifest's 200 (signed when the service signs) or 304.
    private func manifestResponse(_ kept: KeptManifest, current: Bool, account: String, environment: EnvironmentName, longPoll: Bool)
        -> HTTPResponse
    {
        let manifest = kept.manifest
        var headers = [
            HTTPHeader("ETag", manifest.etag), HTTPHeader("Cache-Control", longPoll ? "no-store" : manifestCacheControl(manifest)),
        ]
        if !environments.isDefault { headers.append(HTTPHeader("Vary", "Tabs-Environment")) }
        headers += manifest.cacheHeaders
        if current { return HTTPResponse(status: 304, headers: headers) }
        headers.append(HTTPHeader("Content-Type", "application/json"))
        if let signer = signer {
            headers.append(
                HTTPHeader(
                    "Tabs-Signature", kept.signature(account: account, environment: environment.text, signer: signer)))
        }
        return HTTPResponse(status: 200, headers: headers, body: manifest.body)
    }

    /// `public, max-age=M`: `--manifest-max-age`, but never beyond the manifest's next scheduled change.
    private func manifestCacheControl(_ manifest: Manifest) -> String {
        var seconds = manifestMaxAgeSeconds
        if let next = manifest.nextChange { seconds = min(seconds, max(0, Int((next.unixMillis - clock.unixMillis) / 1000))) }
        return "public, max-age=\(seconds)"
    }

    /// `GET /v1/keys`: every configured public key, cacheable (`public, max-age=300`) and revalidated by its tag.
    func keysReply(_ request: borrowing HTTPRequest) -> HTTPReply {
        let body = signer?.keysDocument ?? Array(#"{"keys":[]}"#.utf8)
        let etag = EntityTag.strong(for: body)
        let headers = [HTTPHeader("ETag", etag), HTTPHeader("Cache-Control", "public, max-age=300")]
        if Self.ifNoneMatchHolds(request, etag) {
            return .response(HTTPResponse(status: 304, headers: headers))
        }
        return .response(HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "application/json")] + headers, body: body))
    }

    /// Whether an `If-None-Match` field names `etag` (weakly, RFC 9110 §13.1.2) or is `*`.
    static func ifNoneMatchHolds(_ request: borrowing HTTPRequest, _ etag: String) -> Bool {
        guard let tag = HeaderFields.EntityTag(etag) else { return false }
        return request.withCombinedHeader("If-None-Match") { field in
            field.map { EntityTagList.matchesWeakly(CollectionOfOne($0), current: tag) } ?? false
        }
    }

    /// The layout entry of `account`'s version `version` when `environment` serves it now (its pointer, or either
    /// arm of a rollout under way); nil for any other version (a draft, or a version only another environment serves:
    /// the answer is signed for `environment`).
    func servedVersion(_ account: String, _ version: Int, in environment: EnvironmentName) -> LayoutEntry? {
        let snapshot = snapshot(for: environment)
        guard let entry = snapshot.entry(for: account) else { return nil }
        let owner = entry.resolved.name
        if let record = snapshot.record(owner), !record.deleted, record.version == version { return entry }
        if let served = snapshot.contents.rollouts[owner] {
            if served.rollout.candidateVersion == version, let candidate = served.candidate.value(in: snapshot.context) {
                return candidate
            }
            if served.rollout.stableVersion == version { return served.stable.value(in: snapshot.context) }
        }
        return nil
    }
}
