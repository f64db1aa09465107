import Synchronization

/// Decisions remembered by the exact bytes of the field that led to them: the millionth request with the same
/// `Accept-Language` costs one hash of its bytes and one comparison, and allocates nothing.
///
/// The key is the field's combined value, its lines joined by `,` (so one line `a,b` and two lines `a` and `b` share
/// an entry, as they share a decision). A cache holds the decisions of one question against one set of offers (say,
/// the locale among one layout's locales): keep one cache per question and offer set.
///
/// Memory is bounded: at most ``capacity`` entries, keys of at most ``maximumKeyCount`` bytes (a longer field is
/// decided each time, in linear time, and not kept). Entries live in buckets of four; a full bucket replaces its
/// entries in turn, so a client sending random values evicts others' decisions but cannot grow memory. The hash is
/// the standard library's seeded SipHash, so a client cannot aim values at one bucket. Safe from any thread: the
/// entries are split into shards, each behind its own `Mutex`.
public final class DecisionCache<Value: Sendable>: Sendable {
    /// The most entries the cache holds.
    public let capacity: Int
    /// The longest key (combined field value, in bytes) that is kept.
    public let maximumKeyCount: Int

    @usableFromInline let shards: [Shard]
    @usableFromInline let shardBits: Int
    @usableFromInline let bucketsPerShard: Int
    @usableFromInline static var ways: Int { 4 }

    /// - Parameters:
    ///   - capacity: the most entries to hold (rounded up to a multiple of 64, at least 64).
    ///   - maximumKeyCount: the longest field value, in bytes, whose decision is kept.
    public init(capacity: Int = 1024, maximumKeyCount: Int = 256) {
        let shardCount = 16
        var buckets = 1
        while buckets * shardCount * Self.ways < capacity { buckets *= 2 }
        bucketsPerShard = buckets
        shardBits = 4
        self.capacity = buckets * shardCount * Self.ways
        self.maximumKeyCount = maximumKeyCount
        shards = (0..<shardCount).map { _ in Shard(slots: buckets * Self.ways) }
    }

    /// The decision for the field `lines`: the one kept for the same bytes, else `decide()`'s, which is kept.
    ///
    /// The lookup is inlinable so that it is specialized for `Value` where it is called: a hit then costs one hash
    /// of the bytes, one lock and one comparison, and no allocation (the miss path is an ordinary call).
    /// - Parameters:
    ///   - lines: the field's lines (see ``FieldLines``; called two or three times).
    ///   - decide: the decision for this field, computed on a miss (outside any lock: two threads may both compute
    ///     it; the decision must depend only on the bytes).
    @inlinable
    public func decision(lines: FieldLines, decide: () -> Value) -> Value {
        var hasher = Hasher()
        var count = 0
        var first = true
        lines { line in
            if !first {
                hasher.combine(UInt8(ascii: ","))
                count += 1
            }
            first = false
            hasher.combine(bytes: UnsafeRawBufferPointer(line))
            count += line.count
        }
        guard count <= maximumKeyCount else { return decideUncached(decide) }
        let hash = hasher.finalize()
        let shard = shards[hash & (shards.count - 1)]
        let bucket = (hash >> shardBits) & (bucketsPerShard - 1)
        let found: Value? = shard.state.withLock { state in
            for slot in bucket * Self.ways..<(bucket + 1) * Self.ways
            where state.hashes[slot] == hash && state.keys[slot].count == count {
                if keyEquals(state.keys[slot], lines) {
                    state.hits += 1
                    return state.values[slot]
                }
            }
            state.misses += 1
            return nil
        }
        if let found { return found }
        return decideAndKeep(lines: lines, count: count, hash: hash, shard: shard, bucket: bucket, decide: decide)
    }

    /// A field longer than ``maximumKeyCount``: decided, counted, not kept.
    @usableFromInline
    func decideUncached(_ decide: () -> Value) -> Value {
        shards[0].state.withLock { $0.uncached += 1 }
        return decide()
    }

    /// The miss path: decide, then keep the decision in its bucket (in a free way, else in place of the way whose
    /// turn it is).
    @usableFromInline
    func decideAndKeep(lines: FieldLines, count: Int, hash: Int, shard: Shard, bucket: Int, decide: () -> Value) -> Value {
        let value = decide()
        var key: [UInt8] = []
        key.reserveCapacity(count)
        var first = true
        lines { line in
            if !first { key.append(UInt8(ascii: ",")) }
            first = false
            key.append(contentsOf: line)
        }
        shard.state.withLock { state in
            let ways = bucket * Self.ways..<(bucket + 1) * Self.ways
            for slot in ways where state.hashes[slot] == hash && state.keys[slot] == key { return }
            let slot = ways.first { state.values[$0] == nil } ?? (ways.lowerBound + Int(state.nextVictim[bucket]))
            if state.values[slot] == nil {
                state.count += 1
            } else {
                state.nextVictim[bucket] = UInt8((Int(state.nextVictim[bucket]) + 1) % Self.ways)
                state.keyBytes -= state.keys[slot].count
            }
            state.hashes[slot] = hash
            state.keys[slot] = key
            state.values[slot] = value
            state.keyBytes += key.count
        }
        return value
    }

    /// ``decision(lines:decide:)`` for lines held in a collection.
    @inlinable
    public func decision(_ lines: some Collection<FieldLine>, decide: () -> Value) -> Value {
        decision(
            lines: { yield in
                for line in lines { yield(line) }
            }, decide: decide)
    }

    /// What the cache holds and how it was used, summed over its shards.
    public struct Statistics: Sendable, Equatable {
        /// Entries held (at most ``DecisionCache/capacity``).
        public var entries = 0
        /// Bytes of the keys held.
        public var keyBytes = 0
        /// Lookups answered from the cache.
        public var hits = 0
        /// Lookups that had to decide.
        public var misses = 0
        /// Fields longer than ``DecisionCache/maximumKeyCount``, decided each time.
        public var uncached = 0
    }

    /// The current counts (each shard read under its lock, one after the other).
    public var statistics: Statistics {
        var total = Statistics()
        for shard in shards {
            shard.state.withLock { state in
                total.entries += state.count
                total.keyBytes += state.keyBytes
                total.hits += state.hits
                total.misses += state.misses
                total.uncached += state.uncached
            }
        }
        return total
    }

    /// One sixteenth of the entries, behind its own lock.
    @usableFromInline
    final class Shard: Sendable {
        @usableFromInline let state: Mutex<ShardState>
        init(slots: Int) { state = Mutex(ShardState(slots: slots)) }
    }

    /// Entries in buckets of ``ways`` consecutive slots; an empty slot has no value.
    @usableFromInline
    struct ShardState {
        @usableFromInline var hashes: [Int]
        @usableFromInline var keys: [[UInt8]]
        @usableFromInline var values: [Value?]
        /// Per bucket, the way a full bucket replaces next.
        @usableFromInline var nextVictim: [UInt8]
        @usableFromInline var count = 0
        @usableFromInline var keyBytes = 0
        @usableFromInline var hits = 0
        @usableFromInline var misses = 0
        @usableFromInline var uncached = 0

        init(slots: Int) {
            hashes = Array(repeating: 0, count: slots)
            keys = Array(repeating: [], count: slots)
            values = Array(repeating: nil, count: slots)
            nextVictim = Array(repeating: 0, count: slots / DecisionCache.ways)
        }
    }
}

/// Whether `key` holds the bytes of `lines` joined by `,` (the caller checked the length).
@usableFromInline
func keyEquals(_ key: [UInt8], _ lines: FieldLines) -> Bool {
    key.withUnsafeBufferPointer { key in
        var offset = 0
        var equal = true
        var first = true
        lines { line in
            guard equal else { return }
            if !first {
                guard offset < key.count, key[offset] == UInt8(ascii: ",") else {
                    equal = false
                    return
                }
                offset += 1
            }
            first = false
            guard offset + line.count <= key.count,
                line.isEmpty || bytesEqual(key.baseAddress! + offset, line.baseAddress!, line.count)
            else {
                equal = false
                return
            }
            offset += line.count
        }
        return equal && offset == key.count
    }
}

private func bytesEqual(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ count: Int) -> Bool {
    var index = 0
    while index < count {
        if a[index] != b[index] { return false }
        index += 1
    }
    return true
}
