import Foundation

/// An executable of the package that is not beside the test bundle: the build did not make it.
public struct MissingExecutable: Error, CustomStringConvertible {
    public let name: String
    public var description: String { "no \(name) next to the test bundle: build with `swift build --build-tests`" }
}

/// The package's executable `name` (`tabserver`), built beside this test bundle.
public func builtExecutable(_ name: String) throws -> URL {
    var directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    for _ in 0..<5 {
        let candidate = directory.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    throw MissingExecutable(name: name)
}
