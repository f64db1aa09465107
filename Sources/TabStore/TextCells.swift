/// A row read as text cells (the shared SQL of both backends reads and writes cells as text), with the errors a
/// damaged row gives.
struct TextCells {
    let cells: [String?]
    /// What the row is, for the error: `audit row`, `webhook row`.
    let row: String

    /// The cell at `column`. - Throws: ``StoreError/unavailable(_:)`` when it is NULL or missing.
    func required(_ column: Int) throws(StoreError) -> String {
        guard column < cells.count, let text = cells[column] else { throw .unavailable("\(row): column \(column) is NULL") }
        return text
    }

    /// The cell at `column` as a number. - Throws: ``StoreError/unavailable(_:)`` when it is NULL or not a number.
    func number(_ column: Int) throws(StoreError) -> Int64 {
        guard let value = Int64(try required(column)) else { throw .unavailable("\(row): column \(column) is not a number") }
        return value
    }

    /// The cell at `column`, nil when it is NULL or missing.
    subscript(_ column: Int) -> String? { column < cells.count ? cells[column] : nil }
}
