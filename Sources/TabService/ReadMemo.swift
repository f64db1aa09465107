import MicroHTTPD
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Answers to reads repeated byte for byte, so that a revalidation the service answered once is answered again
/// without negotiating, routing or comparing tags (that work was a fifth of the CPU of a 304; docs/performance.md).
///
/// An app's requests repeat: the same path, query and header lines (same app build, OS and language), mostly with
/// the ETag it holds. The memo keys an answer on the request's whole identity
/// (``MicroHTTPD/HTTPRequest/withIdentity(maxBytes:_:)``: method, path, query and every field line) and keeps it
/// only while what it was computed from holds: the published snapshot (its sequence) and the variant cache (its
/// sweeps, ``VariantBudget/generation``). A handler remembers an answer only when it depends on nothing else: no
/// token, no time (no rollout), no client address (no long-poll), and a representation with all its coded forms
/// (a brotli form made later would change the answer to the same request).
///
/// Each libmicrohttpd worker thread has its own table (no lock, no shared cache line on the hot path), direct
/// mapped, of ``slotsPerThread`` answers; a table lives as long as its thread. A slot holds the identity's bytes
/// and a reference to a cached representation of at most ``maxRepresentationCost`` bytes. A representation the
/// cache or the snapshot has dropped stays alive while a slot still holds it (a lookup that lands on a slot from
/// an earlier snapshot or generation empties it): at most ``slotsPerThread`` × (``maxIdentityBytes`` +
/// ``maxRepresentationCost``) = 4.25 MiB per worker thread beyond the cache's bound, ~250 bytes per slot in use
/// when the cache holds what the memo does.
final class ReadMemo: Sendable {
    /// What a hit answers: the shared response, the representation it is a form of (marked used on every hit, as a
    /// cache hit marks it) and the metrics slot of the route.
    struct Answer: Sendable {
        let response: PreparedResponse
        let representation: Representation
        let slot: Int
        /// The declared build the answer is for, whose sighting (and withheld answer) every hit notes.
        var build: BuildRegistry.Declared? = nil
    }

    /// The longest identity remembered (a browser's cookies make longer ones; they are answered the usual way):
    /// up to 1 KiB, Swift's temporary allocations are on the stack, beyond it they may be on the heap.
    static let maxIdentityBytes = 1024
    static let slotsPerThread = 256
    /// The largest representation remembered (``Representation/cost``: every form's body and ~2 KiB each): an app's
    /// layout in one locale is 5–15 KiB.
    static let maxRepresentationCost = 16 << 10

    /// Tells this memo's answers from another service's in the same process (tests run several).
    private let owner: UInt64
    private static let owners = Atomic<UInt64>(0)

    init() { owner = Self.owners.add(1, ordering: .relaxed).newValue }

    /// The answer remembered for `request` at this snapshot sequence and cache generation, if any.
    func answer(_ request: borrowing HTTPRequest, sequence: UInt64, generation: UInt64) -> Answer? {
        request.withIdentity(maxBytes: Self.maxIdentityBytes) { identity in
            identity.flatMap { answer(identity: $0, sequence: sequence, generation: generation) }
        }
    }

    /// Remembers `answer` for `request`, computed from the snapshot published as `sequence` and the cache at
    /// `generation` (both read before the answer was computed).
    func remember(_ request: borrowing HTTPRequest, sequence: UInt64, generation: UInt64, answer: Answer) {
        request.withIdentity(maxBytes: Self.maxIdentityBytes) { identity in
            if let identity { remember(identity: identity, sequence: sequence, generation: generation, answer: answer) }
        }
    }

    /// ``answer(_:sequence:generation:)`` for an identity's bytes.
    func answer(identity: UnsafeRawBufferPointer, sequence: UInt64, generation: UInt64) -> Answer? {
        guard !identity.isEmpty else { return nil }  // a request's identity holds its method at least
        return MemoTable.current().find(identity, hash: Self.hash(identity), owner: owner, sequence: sequence, generation: generation)
    }

    /// ``remember(_:sequence:generation:answer:)`` for an identity's bytes.
    func remember(identity: UnsafeRawBufferPointer, sequence: UInt64, generation: UInt64, answer: Answer) {
        guard !identity.isEmpty, identity.count <= Self.maxIdentityBytes, answer.representation.cost <= Self.maxRepresentationCost else {
            return
        }
        MemoTable.current().store(
            identity, hash: Self.hash(identity), owner: owner, sequence: sequence, generation: generation, answer: answer)
    }

    /// FNV-1a over 8-byte words, then mixed: the table's index, not a guard (identities are compared whole).
    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var offset = 0
        while offset + 8 <= bytes.count {
            hash = (hash ^ bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* 0x0000_0100_0000_01B3
            offset += 8
        }
        while offset < bytes.count {
            hash = (hash ^ UInt64(bytes[offset])) &* 0x0000_0100_0000_01B3
            offset += 1
        }
        hash ^= hash >> 33
        hash = hash &* 0xff51_afd7_ed55_8ccd
        return hash ^ (hash >> 33)
    }
}

/// One thread's remembered answers. Used only by the thread it belongs to (found through a pthread key), so it
/// needs no lock and is not `Sendable`.
private final class MemoTable {
    struct Slot {
        var hash: UInt64 = 0
        var owner: UInt64 = 0
        var sequence: UInt64 = 0
        var generation: UInt64 = 0
        /// The identity's bytes (allocated by the table, freed when replaced or with the table).
        var identity: UnsafeMutableRawBufferPointer?
        var answer: ReadMemo.Answer?
    }

    private let slots: UnsafeMutablePointer<Slot>
    private let mask: Int

    private init() {
        slots = .allocate(capacity: ReadMemo.slotsPerThread)
        slots.initialize(repeating: Slot(), count: ReadMemo.slotsPerThread)
        mask = ReadMemo.slotsPerThread - 1
    }

    deinit {
        for index in 0..<ReadMemo.slotsPerThread { slots[index].identity?.deallocate() }
        slots.deinitialize(count: ReadMemo.slotsPerThread)
        slots.deallocate()
    }

    /// The calling thread's table, made on its first use.
    static func current() -> MemoTable {
        if let existing = pthread_getspecific(memoTableKey) {
            return Unmanaged<MemoTable>.fromOpaque(existing).takeUnretainedValue()
        }
        let table = MemoTable()
        // Released by the key's destructor when the thread exits (``memoTableKey``).
        pthread_setspecific(memoTableKey, Unmanaged.passRetained(table).toOpaque())
        return table
    }

    func find(_ identity: UnsafeRawBufferPointer, hash: UInt64, owner: UInt64, sequence: UInt64, generation: UInt64) -> ReadMemo.Answer? {
        let slot = slots + Int(truncatingIfNeeded: hash) & mask
        guard slot.pointee.owner == owner, slot.pointee.sequence == sequence, slot.pointee.generation == generation else {
            // From an earlier snapshot or cache generation: let go of its representation now.
            if slot.pointee.owner == owner { slot.pointee.answer = nil }
            return nil
        }
        guard slot.pointee.hash == hash, let stored = slot.pointee.identity, stored.count == identity.count,
            memcmp(stored.baseAddress!, identity.baseAddress!, identity.count) == 0
        else { return nil }
        return slot.pointee.answer
    }

    func store(
        _ identity: UnsafeRawBufferPointer, hash: UInt64, owner: UInt64, sequence: UInt64, generation: UInt64, answer: ReadMemo.Answer
    ) {
        let slot = slots + Int(truncatingIfNeeded: hash) & mask
        if let old = slot.pointee.identity, old.count != identity.count {
            old.deallocate()
            slot.pointee.identity = nil
        }
        let bytes = slot.pointee.identity ?? .allocate(byteCount: identity.count, alignment: 8)
        bytes.copyMemory(from: identity)
        slot.pointee = Slot(hash: hash, owner: owner, sequence: sequence, generation: generation, identity: bytes, answer: answer)
    }
}

/// The pthread key of each thread's ``MemoTable``; its destructor releases the table (the `passRetained` of
/// ``MemoTable/current()``).
private let memoTableKey: pthread_key_t = {
    var key = pthread_key_t()
    let created = pthread_key_create(&key) { table in
        guard let table else { return }
        Unmanaged<MemoTable>.fromOpaque(table).release()
    }
    precondition(created == 0, "pthread_key_create failed: \(created)")
    return key
}()
