import Compression
import Dispatch
import HashTreeCollections
import HeaderFields
import Logging
import MicroHTTPD
import Synchronization
import TabLayout
import TabPreview
import TabStore

/// `Accept-Language` decisions for one set of locales, remembered by the field's exact bytes (the millionth
/// request with the same header costs a hash lookup). Layouts with the same locales share one (most do), so the
/// caches stay few; past ``maximumShared`` sets, new ones decide without a cache.
final class LocaleNegotiator: Sendable {
    let table: LocaleTable
    private let decisions: DecisionCache<Int>?

    static let maximumShared = 1024
    private static let registry = Mutex<[[String]: LocaleNegotiator]>([:])

    private init(_ locales: [String], cached: Bool) {
        table = LocaleTable(locales)
        decisions = cached ? DecisionCache<Int>(capacity: 256, maximumKeyCount: 256) : nil
    }

    /// The negotiator for `locales` (sorted), shared when possible.
    static func shared(for locales: [String]) -> LocaleNegotiator {
        registry.withLock { registry in
            if let known = registry[locales] { return known }
            guard registry.count < maximumShared else { return LocaleNegotiator(locales, cached: false) }
            let made = LocaleNegotiator(locales, cached: true)
            registry[locales] = made
            return made
        }
    }

    /// The index of the chosen locale, nil for the layout's default.
    func choose(_ field: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let decisions else { return AcceptLanguage.choose(CollectionOfOne(field), table: table) }
        let index = decisions.decision(CollectionOfOne(field)) { AcceptLanguage.choose(CollectionOfOne(field), table: table) ?? -1 }
        return index < 0 ? nil : index
    }
}
