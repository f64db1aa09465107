import Foundation

/// `object` as a JSON request body (empty if it is not one JSONSerialization can write).
package func jsonBody(_ object: [String: Any]) -> [UInt8] { Array((try? JSONSerialization.data(withJSONObject: object)) ?? Data()) }
