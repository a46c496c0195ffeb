import Foundation

/// Which profile the suite runs: CI's bounded one, or the long one (`EVENTQUEUE_LONG_TESTS=1`, see docs/OPERATING.md),
/// read in one place so every scenario agrees on what "long" means.
public enum TestProfile {
    public static let isLong = ProcessInfo.processInfo.environment["EVENTQUEUE_LONG_TESTS"] == "1"

    /// A scenario's length in seconds: `variable` when it is set, else `ci` or `long` by profile.
    public static func seconds(_ variable: String, ci: Double, long: Double) -> Double {
        Double(ProcessInfo.processInfo.environment[variable] ?? "") ?? (isLong ? long : ci)
    }
}
