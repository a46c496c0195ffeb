/// The release this build belongs to: what `queued --version` and `queuectl --version` print, and the version
/// `scripts/package` gives the Debian package (it reads it from the built `queuectl`).
public enum EventQueueVersion {
    public static let string = "1.0.0"
}
