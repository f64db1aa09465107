import Foundation
import PackagePlugin

/// Carries the web console inside the binary: before `TabConsole` compiles, runs `console-embed` over every file
/// of its `Resources/` directory, which writes them into one Swift source file in the plugin's work directory.
/// The files are the command's inputs, so an edited file is embedded again on the next build; the directory is
/// listed each time the build is planned, so an added or removed file is too.
@main
struct ConsoleEmbedder: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let resources = target.directoryURL.appending(path: "Resources")
        let names = try FileManager.default.contentsOfDirectory(atPath: resources.path())
            .filter { !$0.hasPrefix(".") }
            .sorted()
        let inputs = names.map { resources.appending(path: $0) }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedConsoleFiles.swift")
        return [
            .buildCommand(
                displayName: "Embedding the console's \(inputs.count) files in \(target.name)",
                executable: try context.tool(named: "console-embed").url,
                arguments: [output.path()] + inputs.map { $0.path() },
                inputFiles: inputs,
                outputFiles: [output])
        ]
    }
}
