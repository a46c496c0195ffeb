/// The release this build belongs to: what `queued --version` and `queuectl --version` print, and the version
/// `scripts/package` gives the Debian package (it reads it from the built `queuectl`).
///
/// It comes from the repository's `VERSION` file, the last release (`scripts/embed-build-info`, run before every
/// build): the commit that set it builds as exactly that release; a later one says so: the release, `+dev`, the
/// commits since and the commit, e.g. `1.3.0+dev.3.g1a2b3c4d5e6f`.
public enum EventQueueVersion {
    /// The version text, e.g. `1.3.0` or `1.3.0+dev.3.g1a2b3c4d5e6f`.
    public static let string = embedded
}
