import MicroHTTPD

/// The cache keys of the client plane's answers (`Surrogate-Key` for Varnish's xkey and Fastly, `Cache-Tag` for
/// Cloudflare), and the keys a published change makes stale.
///
/// An answer of `…/tabs` or `…/tabs/manifest` for `account` in `environment` is keyed `tabs:{account}`,
/// `tabs:{account}:{environment}` and `tabs-environment:{environment}`. An account served another layout (`default`,
/// when it has none of its own) is keyed by that layout's name too (`tabs:default`, `tabs:default:{environment}`), so
/// that a change to `default` drops the answers of every account it serves, and the account's own first layout drops
/// them by the account's keys. A change purges `tabs:{account}:{environment}` of every account it affected (the account
/// and the layouts extending it); a strings table, which every layout reads, purges `tabs-environment:{environment}`.
/// `?version=N` answers are the same in every environment and immutable: they carry only `tabs:{account}` (and the
/// serving layout's), which no change purges and an operator may.
enum CacheKeys {
    /// The keys of a current answer for `account`, served `owner`'s layout, in `environment`.
    static func current(account: String, owner: String, environment: String) -> [String] {
        var keys = ["tabs:" + account, "tabs:" + account + ":" + environment]
        if owner != account { keys += ["tabs:" + owner, "tabs:" + owner + ":" + environment] }
        return keys + ["tabs-environment:" + environment]
    }

    /// The keys of a `?version=N` answer for `account`, a version of `owner`'s layout.
    static func pinned(account: String, owner: String) -> [String] {
        owner == account ? ["tabs:" + account] : ["tabs:" + account, "tabs:" + owner]
    }

    /// `Surrogate-Key` (space-separated) and `Cache-Tag` (comma-separated) naming `keys`.
    static func headers(_ keys: [String]) -> [HTTPHeader] {
        [HTTPHeader("Surrogate-Key", keys.joined(separator: " ")), HTTPHeader("Cache-Tag", keys.joined(separator: ","))]
    }

    /// The keys the published `events` make stale, sorted, each once: `tabs:{account}:{environment}` per affected
    /// account, `tabs-environment:{environment}` for an event that affects every account (a strings table). An event
    /// that affects none (a change request filed) purges nothing.
    static func purged(by events: [ChangeEvent]) -> [String] {
        var keys: Set<String> = []
        for event in events {
            guard let affected = event.affected else {
                keys.insert("tabs-environment:" + event.environment)
                continue
            }
            for account in affected { keys.insert("tabs:" + account + ":" + event.environment) }
        }
        return keys.sorted()
    }
}
