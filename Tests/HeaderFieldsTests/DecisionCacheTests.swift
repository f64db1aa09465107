import HeaderFields
import Testing

@Suite struct DecisionCacheTests {
    /// Looks `value` up, counting the decisions made.
    func lookup(_ cache: DecisionCache<Int>, _ lines: [String], decisions: inout Int, answer: Int) -> Int {
        withLines(lines) { lines in
            cache.decision(lines) {
                decisions += 1
                return answer
            }
        }
    }

    @Test func aHitReturnsTheStoredDecisionWithoutDecidingAgain() {
        let cache = DecisionCache<Int>()
        var decisions = 0
        #expect(lookup(cache, ["fr-FR,fr;q=0.9,en;q=0.8"], decisions: &decisions, answer: 7) == 7)
        for _ in 0..<1000 {
            #expect(lookup(cache, ["fr-FR,fr;q=0.9,en;q=0.8"], decisions: &decisions, answer: -1) == 7)
        }
        #expect(decisions == 1)
        #expect(lookup(cache, ["fr-FR,fr;q=0.9,en;q=0.7"], decisions: &decisions, answer: 3) == 3)
        #expect(lookup(cache, ["fr-FR,fr;q=0.9,en;q=0.8 "], decisions: &decisions, answer: 4) == 4)
        #expect(decisions == 3)
        let statistics = cache.statistics
        #expect(statistics.entries == 3)
        #expect(statistics.keyBytes == 23 + 23 + 24)
        #expect(statistics.hits == 1000)
        #expect(statistics.misses == 3)
        #expect(statistics.uncached == 0)
    }

    /// "No locale matches, use the default" is a decision too (nil), and is kept as one.
    @Test func aNilDecisionIsKept() {
        let cache = DecisionCache<Int?>()
        var decisions = 0
        for _ in 0..<3 {
            let decided = withLines(["tlh"]) { lines in
                cache.decision(lines) { () -> Int? in
                    decisions += 1
                    return nil
                }
            }
            #expect(decided == nil)
        }
        #expect(decisions == 1)
        #expect(cache.statistics.hits == 2)
    }

    @Test func linesAreKeyedAsTheirCombinedValue() {
        let cache = DecisionCache<Int>()
        var decisions = 0
        #expect(lookup(cache, ["a", "b"], decisions: &decisions, answer: 1) == 1)
        #expect(lookup(cache, ["a,b"], decisions: &decisions, answer: 2) == 1)
        #expect(lookup(cache, ["a", "", "b"], decisions: &decisions, answer: 3) == 3)
        #expect(lookup(cache, ["ab"], decisions: &decisions, answer: 4) == 4)
        #expect(lookup(cache, [], decisions: &decisions, answer: 5) == 5)
        #expect(lookup(cache, [""], decisions: &decisions, answer: 6) == 5, "no field and one empty line are the same bytes")
        #expect(decisions == 4)
    }

    @Test func aClientSendingRandomValuesCannotGrowTheCache() {
        let cache = DecisionCache<Int>(capacity: 1000, maximumKeyCount: 64)
        #expect(cache.capacity == 1024)
        var generator = SeededGenerator(state: 100)
        var decisions = 0
        for index in 0..<100_000 {
            // Distinct values (the index first), random bytes and lengths after it; some longer than the key limit.
            let count = Int.random(in: 0...74, using: &generator)
            let value =
                "\(index):" + String((0..<count).map { _ in Character(Unicode.Scalar(UInt8.random(in: 0x21...0x7E, using: &generator))) })
            #expect(lookup(cache, [value], decisions: &decisions, answer: index) == index)
        }
        let statistics = cache.statistics
        #expect(decisions == 100_000)
        #expect(statistics.entries <= 1024)
        #expect(statistics.entries > 900, "the buckets fill up")
        #expect(statistics.keyBytes <= 1024 * 64)
        #expect(statistics.uncached > 0)
        // A hot value evicted by the flood comes back and is kept again.
        #expect(lookup(cache, ["en"], decisions: &decisions, answer: 1) == 1)
        #expect(lookup(cache, ["en"], decisions: &decisions, answer: 2) == 1)
    }

    @Test func fieldsLongerThanTheKeyLimitAreDecidedEachTime() {
        let cache = DecisionCache<Int>(capacity: 64, maximumKeyCount: 8)
        var decisions = 0
        #expect(lookup(cache, ["123456789"], decisions: &decisions, answer: 1) == 1)
        #expect(lookup(cache, ["123456789"], decisions: &decisions, answer: 2) == 2)
        #expect(lookup(cache, ["1234", "567"], decisions: &decisions, answer: 3) == 3)
        #expect(lookup(cache, ["1234", "567"], decisions: &decisions, answer: 4) == 3)
        #expect(cache.statistics.uncached == 2)
        #expect(cache.statistics.entries == 1)
    }

    @Test func manyThreadsGetTheDecisionOfTheirOwnBytes() async {
        let cache = DecisionCache<Int>(capacity: 64)
        let keys = (0..<200).map { "fr-FR,fr;q=0.\($0)" }
        let wrong = await withTaskGroup(of: Int.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var generator = SeededGenerator(state: UInt64(task))
                    var wrong = 0
                    for _ in 0..<5_000 {
                        let index = Int.random(in: 0..<keys.count, using: &generator)
                        let answer = withLines([keys[index]]) { lines in cache.decision(lines) { index } }
                        if answer != index { wrong += 1 }
                    }
                    return wrong
                }
            }
            return await group.reduce(0, +)
        }
        #expect(wrong == 0)
        let statistics = cache.statistics
        #expect(statistics.hits + statistics.misses == 40_000)
        #expect(statistics.entries <= 64)
    }
}
