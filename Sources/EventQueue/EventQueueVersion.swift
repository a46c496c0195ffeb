/// The release this build belongs to: what `queued --version` and `queuectl --version` print, and the version
/// `scripts/package` gives the Debian package (it reads it from the built `queuectl`).
///
/// It comes from the git tag `vMAJOR.MINOR.PATCH` on the built commit (`scripts/embed-build-info`, run before
/// every build). An untagged build says so: the nearest tag (or CHANGELOG.md's newest release in a clone without
/// tags), `+dev`, the commits since the tag and the commit, e.g. `1.1.0+dev.3.g1a2b3c4d5e6f`.
public enum EventQueueVersion {
    /// The version text, e.g. `1.1.0` or `1.1.0+dev.3.g1a2b3c4d5e6f`.
    public static let string = embedded
}
