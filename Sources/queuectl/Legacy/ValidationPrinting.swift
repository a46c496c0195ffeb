/// Control characters in text from the store written as `\u{1B}`, as validation errors are.
enum ValidationPrinting {
    static func printable(_ text: String) -> String {
        String(
            text.unicodeScalars.map { scalar -> String in
                scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
                    ? "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}" : String(scalar)
            }.joined())
    }
}
