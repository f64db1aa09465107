/// A setting from the environment, a file or a flag that cannot be used; the message names the setting, the
/// place (file and line when there is one) and what is wrong.
public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    public let description: String

    public init(_ description: String) { self.description = description }
}
