//go:build !unix

package dirlock

// Supported: nothing is locked here (TryLock always succeeds).
const Supported = false

// lock does not lock where flock is missing.
func lock(string, bool) (func(), error) { return func() {}, nil }
