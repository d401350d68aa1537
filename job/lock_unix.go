//go:build unix

package job

import (
	"fmt"
	"os"
	"syscall"
)

// lockDir takes an exclusive lock on the output directory dir itself (flock on
// the directory, which leaves no file behind), waiting for a run that is moving
// its outputs in, and returns its release.
func lockDir(dir string) (func(), error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
