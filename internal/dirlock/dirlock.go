// Package dirlock locks a directory itself (flock on the directory, which
// leaves no file behind) against other processes: Lock waits for the holder,
// TryLock fails at once with ErrBusy. A lock ends with its release, or with
// its process, however it ends. Where flock is missing nothing is locked
// (Supported is false).
package dirlock

import "errors"

// ErrBusy is TryLock's error when another process holds the lock.
var ErrBusy = errors.New("in use by another process")

// Lock takes an exclusive lock on dir, waiting while another process holds it,
// and returns its release.
func Lock(dir string) (release func(), err error) { return lock(dir, true) }

// TryLock takes an exclusive lock on dir, or fails with an error wrapping
// ErrBusy when another process holds it.
func TryLock(dir string) (release func(), err error) { return lock(dir, false) }
