import Foundation

// console-embed OUTPUT FILE…: writes OUTPUT, a Swift source file that holds each FILE's name and bytes (base64,
// so that any file, text or not, is one short literal that compiles at once). Run by the ConsoleEmbedder plugin.

let arguments = CommandLine.arguments.dropFirst()
guard let output = arguments.first else {
    FileHandle.standardError.write(Data("usage: console-embed OUTPUT FILE…\n".utf8))
    exit(2)
}
var source = """
    // Generated at build time by Plugins/ConsoleEmbedder from Sources/TabConsole/Resources: do not edit.

    extension ConsoleAssets {
        /// The console's files as the build found them: each name with its bytes in base64.
        static let embedded: [(name: String, base64: String)] = [

    """
for path in arguments.dropFirst() {
    let url = URL(fileURLWithPath: path)
    guard let data = FileManager.default.contents(atPath: path) else {
        FileHandle.standardError.write(Data("console-embed: cannot read \(path)\n".utf8))
        exit(1)
    }
    // A file name is a literal of its own: quotes and backslashes escaped.
    let name = url.lastPathComponent.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    source += "        (\"\(name)\", \"\(data.base64EncodedString())\"),\n"
}
source += "    ]\n}\n"
do {
    try Data(source.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
} catch {
    FileHandle.standardError.write(Data("console-embed: cannot write \(output): \(error)\n".utf8))
    exit(1)
}
