import Testing

@testable import TabStore
@testable import TabStorePostgres

/// The words replicas tell each other at commit, written and read without a database.
struct AnnouncementTests {
    static let every: [Announcement.Kind] = [
        .layout(account: "jack"), .strings(locale: "fr"), .token(id: "tok_1"), .pointer(account: "jack"),
        .stringsPointer(locale: "fr"), .rollout(account: "jack"),
        .rolloutRecorded(account: "jack", environment: "production", rollout: 3, revision: 7),
        .promoted(.layout(account: "jack"), from: "staging", to: "production", version: 12, author: "Zoë de Vries (ops) 100%"),
        .promoted(.strings(locale: "fr"), from: "staging", to: "production", version: 4, author: "release bot"),
    ]

    @Test func everyKindReadsBackAsWritten() {
        for kind in Self.every {
            let announcement = Announcement(kind, committedAtMillis: 1_700_000_000_123, origin: "3kx9")
            #expect(Announcement(payload: announcement.payload) == announcement, "\(announcement.payload)")
        }
        #expect(Set(Self.every.map(\.word)).count == 9)
    }

    @Test func payloadsAreTheWordsOlderReleasesRead() {
        let at = { (kind: Announcement.Kind) in Announcement(kind, committedAtMillis: 1_700_000_000_123, origin: "3kx9").payload }
        #expect(at(.layout(account: "jack")) == "layout jack 1700000000123 3kx9")
        #expect(at(.stringsPointer(locale: "fr")) == "stringspointer fr 1700000000123 3kx9")
        #expect(at(.token(id: "tok_1")) == "token tok_1 1700000000123 3kx9")
        #expect(
            at(.rolloutRecorded(account: "jack", environment: "production", rollout: 3, revision: 7))
                == "rolloutrecorded jack 1700000000123 3kx9 production 3 7")
        #expect(
            at(.promoted(.strings(locale: "fr"), from: "staging", to: "production", version: 4, author: "release bot"))
                == "stringspromoted fr 1700000000123 3kx9 staging production 4 release%20bot")
    }

    @Test func anOlderReleasesAnnouncementHasNoOrigin() {
        let read = Announcement(payload: "rollout legacy 1700000000000")
        #expect(read == Announcement(.rollout(account: "legacy"), committedAtMillis: 1_700_000_000_000, origin: nil))
        #expect(read?.change == .rollout(account: "legacy", committedAtMillis: 1_700_000_000_000))
        #expect(read?.payload == "rollout legacy 1700000000000")
    }

    @Test func anUnknownShortKindIsReadAsALayoutChangeOfItsName() {
        let read = Announcement(payload: "somethingnew jack 1700000000000 elsewhere")
        #expect(read?.kind == .unknown("somethingnew", name: "jack"))
        #expect(read?.change == .layout(account: "jack", committedAtMillis: 1_700_000_000_000))
        #expect(read?.payload == "somethingnew jack 1700000000000 elsewhere")
        // A promotion or recorded rollout change without its extra words is such a kind too.
        #expect(Announcement(payload: "promoted jack 1 o")?.kind == .unknown("promoted", name: "jack"))
    }

    @Test func malformedPayloadsAreNotAnnouncements() {
        for payload in [
            "", "layout", "layout jack", "layout jack soon", "layout jack 1 o extra", "rolloutrecorded jack 1 o production three 7",
            "rolloutrecorded jack 1 o production 3", "promoted jack 1 o staging production twelve bot",
            "promoted jack 1 o staging production 12 %zz", "somethingnew jack 1 o and more words",
        ] {
            #expect(Announcement(payload: payload) == nil, "\(payload)")
        }
    }

    @Test func eachKindIsReportedAsTheChangeReplicasApply() {
        let changes = Self.every.map { Announcement($0, committedAtMillis: 5, origin: nil).change }
        #expect(
            changes == [
                .layout(account: "jack", committedAtMillis: 5), .strings(locale: "fr", committedAtMillis: 5),
                .token(id: "tok_1", committedAtMillis: 5), .layout(account: "jack", committedAtMillis: 5),
                .strings(locale: "fr", committedAtMillis: 5), .rollout(account: "jack", committedAtMillis: 5),
                .rolloutRecorded(account: "jack", environment: "production", rollout: 3, revision: 7, committedAtMillis: 5),
                .promoted(
                    .layout(account: "jack"), from: "staging", to: "production", version: 12, author: "Zoë de Vries (ops) 100%",
                    committedAtMillis: 5),
                .promoted(
                    .strings(locale: "fr"), from: "staging", to: "production", version: 4, author: "release bot", committedAtMillis: 5),
            ])
    }
}
