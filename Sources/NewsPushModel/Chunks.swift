extension Array {
    /// The array in consecutive pieces of at most `size` elements (queries bind at most so many
    /// values, sends go out so many at a time).
    public func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
