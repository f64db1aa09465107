import Testing

@testable import TabAccess

@Suite struct ScopeTests {
    @Test func writeDeployAndApproveImplyReadDeployImpliesRollbackAndAdminImpliesEverything() {
        let table: [Scope: Set<Scope>] = [
            .read: [.read], .write: [.read, .write], .deploy: [.read, .deploy, .rollback], .rollback: [.rollback],
            .approve: [.read, .approve], .admin: Set(Scope.allCases),
        ]
        for holder in Scope.allCases {
            for needed in Scope.allCases {
                #expect(holder.grants(needed) == table[holder]!.contains(needed), "\(holder) → \(needed)")
            }
        }
        #expect(![Scope.write, .deploy].grant(.admin))
        #expect([Scope.write, .deploy].grant(.deploy))
        #expect(![Scope]().grant(.read))
        #expect(![Scope.rollback].grant(.read) && ![Scope.rollback].grant(.deploy), "Alertmanager's token reads nothing")
        #expect(![Scope.write, .deploy].grant(.approve), "a writer never approves by holding write")
    }
}

@Suite struct GlobTests {
    @Test func literalsMatchOnlyThemselvesWholeAndCaseSensitively() {
        let glob = Glob("jack")
        #expect(glob.matches("jack"))
        #expect(!glob.matches("Jack"))
        #expect(!glob.matches("jack2"))
        #expect(!glob.matches("ajack"))
        #expect(!glob.matches("jac"))
        #expect(!glob.matches(""))
    }

    @Test func aStarMatchesAnyRunIncludingNone() {
        let glob = Glob("shop-*")
        #expect(glob.matches("shop-"))
        #expect(glob.matches("shop-berlin"))
        #expect(glob.matches("shop--x-*"))
        #expect(!glob.matches("shop"))
        #expect(!glob.matches("my-shop-berlin"))
        #expect(Glob("*-eu").matches("shop-eu"))
        #expect(!Glob("*-eu").matches("shop-eu2"))
        #expect(Glob("a*b*c").matches("abc"))
        #expect(Glob("a*b*c").matches("a-x-b-y-c"))
        #expect(!Glob("a*b*c").matches("a-x-c-y-b"))
        #expect(Glob("*").matches(""))
        #expect(Glob("*").matches("anything.at_all"))
        #expect(Glob("**").matches("x"))
    }

    @Test func aQuestionMarkMatchesExactlyOneCharacter() {
        #expect(Glob("shop-??").matches("shop-eu"))
        #expect(!Glob("shop-??").matches("shop-e"))
        #expect(!Glob("shop-??").matches("shop-eur"))
        #expect(Glob("?*").matches("x"))
        #expect(!Glob("?*").matches(""))
        #expect(Glob("*?x").matches("ax"))
        #expect(!Glob("*?x").matches("x"))
    }

    @Test func onlyStarsMatchEverything() {
        #expect(Glob("*").matchesEverything)
        #expect(Glob("***").matchesEverything)
        #expect(!Glob("*?").matchesEverything)
        #expect(!Glob("").matchesEverything)
        #expect(!Glob("a*").matchesEverything)
    }

    /// The pattern that makes backtracking matchers exponential: the steps stay within (pattern + 1) × (name + 1).
    @Test func pathologicalPatternsTakeAtMostQuadraticSteps() {
        for stars in [2, 8, 32, 64] {
            let pattern = String(repeating: "a*", count: stars) + "b"
            let name = Array(repeating: Character("a"), count: 128)
            var steps = 0
            #expect(!Glob(pattern).matches(name, steps: &steps))
            #expect(steps <= (pattern.count + 1) * (name.count + 1), "\(stars) stars: \(steps) steps")
        }
    }

    @Test func accountGlobsTakeAccountCharactersAndTheStarWildcard() throws {
        #expect(try AccountGlob("shop-*").matches("shop-berlin"))
        #expect(try AccountGlob("a.b_c-*").matches("a.b_c-1"))
        #expect(AccountGlob.all.isAll)
        #expect(try !AccountGlob("shop-*").isAll)
        // Only `*` is a wildcard in an account glob (docs/security.md): `?` is refused like any other character.
        for bad in ["", "shop/*", "shop-[ab]", "shop *", "shop-?", "é", String(repeating: "a", count: 129), "a\u{0}"] {
            #expect(throws: AccountGlob.Invalid.self, "\(bad.debugDescription)") { try AccountGlob(bad) }
        }
        #expect(try AccountGlob(String(repeating: "a", count: 128)).matches(String(repeating: "a", count: 128)))
    }
}

/// `Glob` against the textbook recursive definition (exponential, fine on short inputs) over many generated
/// patterns and names drawn from a small alphabet, where stars and question marks collide most.
@Suite struct GlobDifferentialTests {
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static func reference(_ pattern: ArraySlice<Character>, _ name: ArraySlice<Character>) -> Bool {
        guard let first = pattern.first else { return name.isEmpty }
        switch first {
        case "*": return reference(pattern.dropFirst(), name) || (!name.isEmpty && reference(pattern, name.dropFirst()))
        case "?": return !name.isEmpty && reference(pattern.dropFirst(), name.dropFirst())
        default: return name.first == first && reference(pattern.dropFirst(), name.dropFirst())
        }
    }

    @Test func matchingAgreesWithTheRecursiveDefinition() {
        var generator = SplitMix(state: 22)
        let patternAlphabet = Array("ab*?-")
        let nameAlphabet = Array("ab-")
        var matched = 0
        for _ in 0..<20_000 {
            let pattern = String(
                (0..<Int.random(in: 0...7, using: &generator)).map { _ in patternAlphabet.randomElement(using: &generator)! })
            let name = String((0..<Int.random(in: 0...8, using: &generator)).map { _ in nameAlphabet.randomElement(using: &generator)! })
            let expected = Self.reference(Array(pattern)[...], Array(name)[...])
            #expect(Glob(pattern).matches(name) == expected, "\(pattern) ~ \(name)")
            if expected { matched += 1 }
        }
        #expect(matched > 1000, "too few matches generated to compare: \(matched)")
    }
}
