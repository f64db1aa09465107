import TabServiceTestSupport
import Testing

// The shared bodies of TabServiceTestSupport run over a real socket to a live server (``SocketClient``). Their
// in-process runs are TabServiceUnitTests' `BothWaysInProcessTests.swift`.

/// Client-plane reads over a socket (``ClientPlaneReadChecks``).
@Suite struct ClientPlaneReadsSocketTests {
    @Test func tabsAnswer200Then304ForItsETag() async throws {
        try await ClientPlaneReadChecks.tabsAnswer200Then304ForItsETag(SocketClient.make())
    }

    @Test func headAnswersGetsHeadersWithoutTheBody() async throws {
        try await ClientPlaneReadChecks.headAnswersGetsHeadersWithoutTheBody(SocketClient.make())
    }

    @Test func anAccountWithoutALayoutGetsDefaults() async throws {
        try await ClientPlaneReadChecks.anAccountWithoutALayoutGetsDefaults(SocketClient.make())
    }
}

/// Problem answers over a socket (``ProblemAnswerChecks``).
@Suite struct ProblemAnswersSocketTests {
    @Test func badQueryArgumentsAreOne400WithEveryPointer() async throws {
        try await ProblemAnswerChecks.badQueryArgumentsAreOne400WithEveryPointer(SocketClient.make())
    }

    @Test func anInvalidLayoutIs422AtItsPointerAndStoresNothing() async throws {
        try await ProblemAnswerChecks.anInvalidLayoutIs422AtItsPointerAndStoresNothing(SocketClient.make())
    }

    @Test func clientPlaneErrorsAreUncachedProblems() async throws {
        try await ProblemAnswerChecks.clientPlaneErrorsAreUncachedProblems(SocketClient.make())
    }
}

/// Writes and the reads after them over a socket (``WriteThenReadChecks``).
@Suite struct WriteThenReadSocketTests {
    @Test func aWrittenLayoutIsTheNextRead() async throws {
        try await WriteThenReadChecks.aWrittenLayoutIsTheNextRead(SocketClient.make())
    }

    @Test func aStaleIfMatchIs412AndTheCurrentOneWrites() async throws {
        try await WriteThenReadChecks.aStaleIfMatchIs412AndTheCurrentOneWrites(SocketClient.make())
    }
}
