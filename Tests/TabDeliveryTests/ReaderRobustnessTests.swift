import Testing

@testable import TabDelivery

/// Every reader of client or operator input answers a value or a ``RolloutError`` for any bytes, never a trap:
/// valid inputs mutated byte by byte (a seeded generator, so that a failure repeats).
@Suite struct ReaderRobustnessTests {
    /// SplitMix64: small, seeded, good enough to pick mutations.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let alphabet = Array(#"{}[]":,0123456789.-+eEPTHMSDWYZ \t\u{0}\u{7F}ä"#.utf8)

    func mutations(of seed: String, count: Int, _ generator: inout SeededGenerator) -> [[UInt8]] {
        (0..<count).map { _ in
            var bytes = Array(seed.utf8)
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let position = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &generator)
                let byte = Self.alphabet.randomElement(using: &generator)!
                switch Int.random(in: 0..<3, using: &generator) {
                case 0 where !bytes.isEmpty: bytes[position] = byte
                case 1 where !bytes.isEmpty: bytes.remove(at: position)
                default: bytes.insert(byte, at: position)
                }
            }
            return bytes
        }
    }

    @Test func rolloutPromotionPatchAndAlertBodiesNeverTrap() {
        var generator = SeededGenerator(state: 21)
        let now = time("2026-11-25T16:00:00Z")
        let environments = try! EnvironmentList(parsing: "staging,production")
        let seeds = [
            #"{"version": 5, "steps": [{"percent": 5, "hold": "PT10M"}, {"percent": 25.5, "hold": "P1DT2H"}], "startAt": "2026-11-26T09:00:00Z", "seed": "s", "installs": ["a"]}"#,
            #"{"from": "staging", "to": "production", "rollout": {"percent": 10}}"#,
            #"{"percent": 30, "paused": false}"#,
            #"{"version": "4", "truncatedAlerts": 0, "alerts": [{"status": "firing", "labels": {"account": "jack"}, "annotations": {"summary": "x"}}]}"#,
        ]
        var outcomes = (values: 0, errors: 0)
        for seed in seeds {
            for body in mutations(of: seed, count: 600, &generator) {
                for read in [
                    { _ = try RolloutPlan.decode(body, now: now) },
                    { _ = try PromotionRequest.decode(body, environments: environments, now: now) },
                    { _ = try RolloutPatch.decode(body) }, { _ = try AlertmanagerPayload.decode(body) },
                ] as [() throws -> Void] {
                    if failure(read) == nil { outcomes.values += 1 } else { outcomes.errors += 1 }
                }
            }
        }
        // Both outcomes happen: the mutations reach past the first byte of the readers.
        #expect(outcomes.values > 50 && outcomes.errors > 4_000)
    }

    @Test func durationsTimesAndInstallIDsNeverTrap() {
        var generator = SeededGenerator(state: 26)
        var parsed = 0
        for seed in ["P1Y2M3DT4H5M6.7S", "PT10M", "P2W", "2026-11-25T17:30:00.5+01:30", "install-0"] {
            for bytes in mutations(of: seed, count: 1_500, &generator) {
                let text = String(decoding: bytes, as: UTF8.self)
                if (try? ISODuration(text)) != nil { parsed += 1 }
                if Timestamp.parseRFC3339(text) != nil { parsed += 1 }
                _ = try? InstallID.parse(text)
                _ = EnvironmentName(text)
            }
        }
        #expect(parsed > 100)
    }
}
