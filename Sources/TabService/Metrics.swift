import Synchronization

/// A counter shared by every thread.
final class Counter: Sendable {
    let value = Atomic<Int>(0)
    func add(_ n: Int = 1) { value.add(n, ordering: .relaxed) }
    var current: Int { value.load(ordering: .relaxed) }
}

/// Prometheus metrics: requests by route and status, a latency histogram, variant-cache hits and misses,
/// store operations and errors. Updates are relaxed atomic adds (no lock on the read path).
final class Metrics: Sendable {
    static let statuses = [200, 201, 204, 304, 400, 401, 404, 405, 406, 409, 412, 413, 415, 422, 428, 431, 500, 503]
    static let bucketBounds: [Double] = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

    private let requests: [Counter]  // label × (statuses + other)
    /// The `route` label of each metrics slot (``RouteTable/labels``: 0 is `unknown`).
    private let labels: [String]
    private let buckets: [Counter]  // bounds + +Inf
    private let latencyNanos = Counter()
    private let latencyCount = Counter()
    let cacheHits = Atomic<Int>(0)
    let cacheMisses = Atomic<Int>(0)
    /// Reads answered from the read memo (``ReadMemo``): a subset of the cache hits.
    let memoHits = Atomic<Int>(0)
    let storeOperations = Counter()
    let storeErrors = Counter()
    /// The delay of the last change seen from another replica, in milliseconds.
    private let replicationLagMillis = Atomic<Int>(0)

    /// Changes read from the store because another replica made them.
    let replicatedChanges = Counter()
    /// Audit entries written: a change's (in its transaction) or a refusal's (coalesced, each write once a second).
    let auditChangeWrites = Counter()
    let auditRefusalWrites = Counter()
    /// Audit entries deleted by age (`--audit-retention`) or by the row budget (`--audit-max-rows`).
    let auditPruned = Counter()
    /// Cache purges answered 2xx, and those refused or unanswered within their deadline (``CachePurger``).
    let purgesSent = Counter()
    let purgesFailed = Counter()

    func noteReplicationLag(millis: Int64) {
        replicationLagMillis.store(Int(max(0, millis)), ordering: .relaxed)
        replicatedChanges.add()
    }

    init(labels: [String] = TabService.routeTable.labels) {
        self.labels = labels
        requests = (0..<(labels.count * (Self.statuses.count + 1))).map { _ in Counter() }
        buckets = (0...Self.bucketBounds.count).map { _ in Counter() }
    }

    /// Counts an answer in a label's slot (``RouteTable/labels``).
    func record(slot: Int, status: Int, nanoseconds: UInt64) {
        let column = Self.statuses.firstIndex(of: status) ?? Self.statuses.count
        requests[slot * (Self.statuses.count + 1) + column].add()
        let seconds = Double(nanoseconds) / 1e9
        let bucket = Self.bucketBounds.firstIndex { seconds <= $0 } ?? Self.bucketBounds.count
        buckets[bucket].add()
        latencyNanos.add(Int(nanoseconds))
        latencyCount.add()
    }

    /// The Prometheus text exposition (version 0.0.4).
    func render(snapshotEntries: Int, budget: VariantBudget) -> String {
        var out = "# HELP tabserver_http_requests_total Requests answered, by route and status.\n"
        out += "# TYPE tabserver_http_requests_total counter\n"
        let width = Self.statuses.count + 1
        for (index, label) in labels.enumerated() {
            for (column, counter) in requests[index * width..<(index + 1) * width].enumerated() where counter.current > 0 {
                let status = column < Self.statuses.count ? String(Self.statuses[column]) : "other"
                out += "tabserver_http_requests_total{route=\"\(label)\",status=\"\(status)\"} \(counter.current)\n"
            }
        }
        out += "# HELP tabserver_http_request_duration_seconds Time from complete request to queued response.\n"
        out += "# TYPE tabserver_http_request_duration_seconds histogram\n"
        var cumulative = 0
        for (i, bound) in Self.bucketBounds.enumerated() {
            cumulative += buckets[i].current
            out += "tabserver_http_request_duration_seconds_bucket{le=\"\(bound)\"} \(cumulative)\n"
        }
        cumulative += buckets[Self.bucketBounds.count].current
        out += "tabserver_http_request_duration_seconds_bucket{le=\"+Inf\"} \(cumulative)\n"
        out += "tabserver_http_request_duration_seconds_sum \(Double(latencyNanos.current) / 1e9)\n"
        out += "tabserver_http_request_duration_seconds_count \(latencyCount.current)\n"
        out += "# HELP tabserver_variant_cache_hits_total Requests served from an already compiled variant.\n"
        out += "# TYPE tabserver_variant_cache_hits_total counter\n"
        out += "tabserver_variant_cache_hits_total \(cacheHits.load(ordering: .relaxed))\n"
        out += "# HELP tabserver_read_memo_hits_total Reads answered as the same bytes were answered before at this snapshot.\n"
        out += "# TYPE tabserver_read_memo_hits_total counter\n"
        out += "tabserver_read_memo_hits_total \(memoHits.load(ordering: .relaxed))\n"
        out += "# HELP tabserver_variant_cache_misses_total Variants compiled on first request.\n"
        out += "# TYPE tabserver_variant_cache_misses_total counter\n"
        out += "tabserver_variant_cache_misses_total \(cacheMisses.load(ordering: .relaxed))\n"
        out += "# HELP tabserver_snapshot_layouts Layouts compiled into the serving snapshot.\n"
        out += "# TYPE tabserver_snapshot_layouts gauge\n"
        out += "tabserver_snapshot_layouts \(snapshotEntries)\n"
        out += "# HELP tabserver_variant_cache_entries Compiled variants held.\n"
        out += "# TYPE tabserver_variant_cache_entries gauge\n"
        out += "tabserver_variant_cache_entries \(budget.representations)\n"
        out += "# HELP tabserver_variant_cache_bytes Memory the compiled variants hold (bounded by --cache-limit).\n"
        out += "# TYPE tabserver_variant_cache_bytes gauge\n"
        out += "tabserver_variant_cache_bytes \(budget.bytes)\n"
        out += "# HELP tabserver_variant_cache_evictions_total Variants dropped to keep the cache within its limit.\n"
        out += "# TYPE tabserver_variant_cache_evictions_total counter\n"
        out += "tabserver_variant_cache_evictions_total \(budget.evictions.load(ordering: .relaxed))\n"
        out += "# HELP tabserver_store_operations_total Store calls made.\n"
        out += "# TYPE tabserver_store_operations_total counter\n"
        out += "tabserver_store_operations_total \(storeOperations.current)\n"
        out += "# HELP tabserver_store_errors_total Store calls that failed (not counting refused preconditions).\n"
        out += "# TYPE tabserver_store_errors_total counter\n"
        out += "tabserver_store_errors_total \(storeErrors.current)\n"
        out += "# HELP tabserver_replication_lag_seconds Commit-to-snapshot delay of the last change another replica made.\n"
        out += "# TYPE tabserver_replication_lag_seconds gauge\n"
        out += "tabserver_replication_lag_seconds \(Double(replicationLagMillis.load(ordering: .relaxed)) / 1000)\n"
        out += "# HELP tabserver_replicated_changes_total Changes another replica made, read from the shared store.\n"
        out += "# TYPE tabserver_replicated_changes_total counter\n"
        out += "tabserver_replicated_changes_total \(replicatedChanges.current)\n"
        out += "# HELP tabserver_audit_writes_total Audit entries written (a refusal's write may add to a coalesced entry).\n"
        out += "# TYPE tabserver_audit_writes_total counter\n"
        out += "tabserver_audit_writes_total{kind=\"change\"} \(auditChangeWrites.current)\n"
        out += "tabserver_audit_writes_total{kind=\"refusal\"} \(auditRefusalWrites.current)\n"
        out += "# HELP tabserver_audit_pruned_total Audit entries deleted for their age or beyond the row budget.\n"
        out += "# TYPE tabserver_audit_pruned_total counter\n"
        out += "tabserver_audit_pruned_total \(auditPruned.current)\n"
        out += "# HELP tabserver_cache_purges_total Purge requests sent to --purge-url caches, by result.\n"
        out += "# TYPE tabserver_cache_purges_total counter\n"
        out += "tabserver_cache_purges_total{result=\"sent\"} \(purgesSent.current)\n"
        out += "tabserver_cache_purges_total{result=\"failed\"} \(purgesFailed.current)\n"
        return out
    }
}
