import TabServiceTestSupport
import Testing

// The shared bodies of TabServiceTestSupport run in process (``InProcessClient``): no socket. Their socket runs are
// TabServiceTests' `BothWaysSocketTests.swift`.

/// Client-plane reads in process (``ClientPlaneReadChecks``).
@Suite struct ClientPlaneReadsInProcessTests {
    @Test func tabsAnswer200Then304ForItsETag() async throws {
        try await ClientPlaneReadChecks.tabsAnswer200Then304ForItsETag(InProcessClient.make())
    }

    @Test func headAnswersGetsHeadersWithoutTheBody() async throws {
        try await ClientPlaneReadChecks.headAnswersGetsHeadersWithoutTheBody(InProcessClient.make())
    }

    @Test func anAccountWithoutALayoutGetsDefaults() async throws {
        try await ClientPlaneReadChecks.anAccountWithoutALayoutGetsDefaults(InProcessClient.make())
    }
}

/// Problem answers in process (``ProblemAnswerChecks``).
@Suite struct ProblemAnswersInProcessTests {
    @Test func badQueryArgumentsAreOne400WithEveryPointer() async throws {
        try await ProblemAnswerChecks.badQueryArgumentsAreOne400WithEveryPointer(InProcessClient.make())
    }

    @Test func anInvalidLayoutIs422AtItsPointerAndStoresNothing() async throws {
        try await ProblemAnswerChecks.anInvalidLayoutIs422AtItsPointerAndStoresNothing(InProcessClient.make())
    }

    @Test func clientPlaneErrorsAreUncachedProblems() async throws {
        try await ProblemAnswerChecks.clientPlaneErrorsAreUncachedProblems(InProcessClient.make())
    }
}

/// Writes and the reads after them in process (``WriteThenReadChecks``).
@Suite struct WriteThenReadInProcessTests {
    @Test func aWrittenLayoutIsTheNextRead() async throws {
        try await WriteThenReadChecks.aWrittenLayoutIsTheNextRead(InProcessClient.make())
    }

    @Test func aStaleIfMatchIs412AndTheCurrentOneWrites() async throws {
        try await WriteThenReadChecks.aStaleIfMatchIs412AndTheCurrentOneWrites(InProcessClient.make())
    }
}
