import ArgumentParser

/// `tabserver`: serve, compile, validate and import tab layouts.
@main
struct TabServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tabserver",
        abstract: "Serves tab-bar layouts to mobile apps, compiled from property lists or JSON.",
        subcommands: [Serve.self, Compile.self, Validate.self, Import.self, Export.self, Migrate.self, Healthcheck.self, Keys.self])
}
