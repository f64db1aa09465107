import TabStore

/// What a replica tells the others of a commit: the payload of one NOTIFY on ``PostgresStore/channel``, delivered
/// when the transaction commits. It is written and read here only, so that the words and their order are in one place.
///
/// The payload is words separated by single spaces: `<kind> <name> <committed ms> <origin>`, and for three kinds more
/// words after those four:
///
/// | kind | name | more words |
/// |---|---|---|
/// | `layout` | account | (a version row was inserted) |
/// | `strings` | locale | (a strings version row was inserted) |
/// | `token` | token id | |
/// | `pointer` | account | (an environment's pointer moved) |
/// | `stringspointer` | locale | |
/// | `rollout` | account | (read by replicas of an older release) |
/// | `rolloutrecorded` | account | `<environment> <rollout id> <revision>` |
/// | `promoted` | account | `<from> <to> <version> <author>` (the author a ``NotificationWord``) |
/// | `stringspromoted` | locale | `<from> <to> <version> <author>` |
/// | `revocations` | account | (a version revoked or un-revoked; an older release reloads the account) |
///
/// An older release sends no origin; and a kind of four words at most that this release does not know is read as a
/// layout change of its name (``Kind/unknown(_:name:)``): reloading the account is what a kind added later can count on.
struct Announcement: Sendable, Equatable {
    /// What changed.
    enum Kind: Sendable, Equatable {
        case layout(account: String)
        case strings(locale: String)
        case token(id: String)
        case pointer(account: String)
        case stringsPointer(locale: String)
        /// A rollout changed, as an older release announces it (which rollout and revision unsaid).
        case rollout(account: String)
        case rolloutRecorded(account: String, environment: String, rollout: Int, revision: Int)
        case promoted(PromotionSubject, from: String, to: String, version: Int, author: String)
        /// An account's revoked versions changed.
        case revocations(account: String)
        /// A kind this release does not know, of four words at most.
        case unknown(_ kind: String, name: String)
    }

    var kind: Kind
    var committedAtMillis: Int64
    /// The announcing store's ``PostgresStore/origin``; nil from an older release, which sends none.
    var origin: String?

    init(_ kind: Kind, committedAtMillis: Int64, origin: String?) {
        self.kind = kind
        self.committedAtMillis = committedAtMillis
        self.origin = origin
    }

    /// The NOTIFY payload.
    var payload: String {
        var words = [kind.word, kind.name, String(committedAtMillis)]
        if let origin { words.append(origin) }
        switch kind {
        case .rolloutRecorded(_, let environment, let rollout, let revision):
            words += [environment, String(rollout), String(revision)]
        case .promoted(_, let from, let to, let version, let author):
            words += [from, to, String(version), NotificationWord.encode(author)]
        case .layout, .strings, .token, .pointer, .stringsPointer, .rollout, .revocations, .unknown: break
        }
        return words.joined(separator: " ")
    }

    /// Reads a payload; nil when it is not one (a known kind with the wrong number of words or an unreadable number or
    /// author, or a longer payload of an unknown kind).
    init?(payload: String) {
        let words = payload.split(separator: " ").map(String.init)
        guard words.count >= 3, let millis = Int64(words[2]) else { return nil }
        let (word, name) = (words[0], words[1])
        switch (word, words.count) {
        case ("promoted", 8), ("stringspromoted", 8):
            guard let version = Int(words[6]), let author = NotificationWord.decode(Substring(words[7])) else { return nil }
            let subject: PromotionSubject = word == "promoted" ? .layout(account: name) : .strings(locale: name)
            self.init(
                .promoted(subject, from: words[4], to: words[5], version: version, author: author), committedAtMillis: millis,
                origin: words[3])
        case ("rolloutrecorded", 7):
            guard let rollout = Int(words[5]), let revision = Int(words[6]) else { return nil }
            self.init(
                .rolloutRecorded(account: name, environment: words[4], rollout: rollout, revision: revision), committedAtMillis: millis,
                origin: words[3])
        case (_, 3), (_, 4):
            let kind: Kind =
                switch word {
                case "layout": .layout(account: name)
                case "strings": .strings(locale: name)
                case "token": .token(id: name)
                case "pointer": .pointer(account: name)
                case "stringspointer": .stringsPointer(locale: name)
                case "rollout": .rollout(account: name)
                case "revocations": .revocations(account: name)
                default: .unknown(word, name: name)
                }
            self.init(kind, committedAtMillis: millis, origin: words.count == 4 ? words[3] : nil)
        default: return nil
        }
    }

    /// The change a listener reports for it (whether it reports it at all is the listener's decision).
    var change: StoreChange {
        switch kind {
        case .layout(let account), .pointer(let account), .unknown(_, let account):
            .layout(account: account, committedAtMillis: committedAtMillis)
        case .strings(let locale), .stringsPointer(let locale): .strings(locale: locale, committedAtMillis: committedAtMillis)
        case .token(let id): .token(id: id, committedAtMillis: committedAtMillis)
        case .rollout(let account): .rollout(account: account, committedAtMillis: committedAtMillis)
        case .revocations(let account): .revocations(account: account, committedAtMillis: committedAtMillis)
        case .rolloutRecorded(let account, let environment, let rollout, let revision):
            .rolloutRecorded(
                account: account, environment: environment, rollout: rollout, revision: revision, committedAtMillis: committedAtMillis)
        case .promoted(let subject, let from, let to, let version, let author):
            .promoted(subject, from: from, to: to, version: version, author: author, committedAtMillis: committedAtMillis)
        }
    }
}

extension Announcement.Kind {
    /// The payload's first word.
    var word: String {
        switch self {
        case .layout: "layout"
        case .strings: "strings"
        case .token: "token"
        case .pointer: "pointer"
        case .stringsPointer: "stringspointer"
        case .rollout: "rollout"
        case .rolloutRecorded: "rolloutrecorded"
        case .revocations: "revocations"
        case .promoted(.layout, _, _, _, _): "promoted"
        case .promoted(.strings, _, _, _, _): "stringspromoted"
        case .unknown(let word, _): word
        }
    }

    /// The payload's second word: the account, locale or token id it is about.
    var name: String {
        switch self {
        case .layout(let name), .strings(let name), .token(let name), .pointer(let name), .stringsPointer(let name), .rollout(let name),
            .revocations(let name),
            .rolloutRecorded(let name, _, _, _), .promoted(.layout(let name), _, _, _, _), .promoted(.strings(let name), _, _, _, _),
            .unknown(_, let name):
            name
        }
    }
}
