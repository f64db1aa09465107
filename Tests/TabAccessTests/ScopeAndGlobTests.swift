import Testing

@testable import TabAccess

@Suite struct ScopeTests {
    @Test func writeAndDeployImplyReadAndAdminImpliesEverything() {
        let table: [Scope: Set<Scope>] = [
            .read: [.read], .write: [.read, .write], .deploy: [.read, .deploy], .admin: Set(Scope.allCases),
        ]
        for holder in Scope.allCases {
            for needed in Scope.allCases {
                #expect(holder.grants(needed) == table[holder]!.contains(needed), "\(holder) → \(needed)")
            }
        }
        #expect(![Scope.write, .deploy].grant(.admin))
        #expect([Scope.write, .deploy].grant(.deploy))
        #expect(![Scope]().grant(.read))
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

    @Test func accountGlobsTakeAccountCharactersAndWildcards() throws {
        #expect(try AccountGlob("shop-*").matches("shop-berlin"))
        #expect(try AccountGlob("a.b_c-?").matches("a.b_c-1"))
        #expect(AccountGlob.all.isAll)
        #expect(try !AccountGlob("shop-*").isAll)
        for bad in ["", "shop/*", "shop-[ab]", "shop *", "é", String(repeating: "a", count: 129), "a\u{0}"] {
            #expect(throws: AccountGlob.Invalid.self, "\(bad.debugDescription)") { try AccountGlob(bad) }
        }
        #expect(try AccountGlob(String(repeating: "a", count: 128)).matches(String(repeating: "a", count: 128)))
    }
}
