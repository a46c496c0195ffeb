/// SplitMix64 (Steele, Lea and Flood; the seeding generator of Java's `SplittableRandom`): a small deterministic
/// generator, so that whatever draws from it replays exactly from its seed: the Braze sink's pacing jitter (and so
/// the fleet simulation), the fake Braze's faults, the tests' random inputs. Here, in the module every other one
/// reaches, so that there is one; `package`, so it is no part of the writer library's API.
package struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    package init(seed: UInt64) {
        state = seed
    }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
