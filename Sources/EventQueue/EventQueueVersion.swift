/// The release this build belongs to (`--version`, and the Debian package's version), from `VERSION` by
/// `scripts/embed-build-info`: exactly the release at the commit that set it, else e.g. `1.3.0+dev.3.g1a2b3c4d5e6f`.
public enum EventQueueVersion {
    /// The version text, e.g. `1.3.0` or `1.3.0+dev.3.g1a2b3c4d5e6f`.
    public static let string = embedded
}
