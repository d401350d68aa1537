//go:build unix

package dirlock_test

import (
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/partopt/partopt/internal/dirlock"
)

// A lock is held against other processes: TryLock in a child fails with
// ErrBusy while this process holds it, and succeeds once it is released.
func TestTryLockFailsWhileAnotherProcessHoldsTheLock(t *testing.T) {
	if dir := os.Getenv("DIRLOCK_CHILD"); dir != "" {
		release, err := dirlock.TryLock(dir)
		if errors.Is(err, dirlock.ErrBusy) {
			os.Exit(3)
		}
		if err != nil {
			os.Exit(4)
		}
		release()
		os.Exit(0)
	}
	dir := t.TempDir()
	child := func() int {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTryLockFailsWhileAnotherProcessHoldsTheLock$")
		cmd.Env = append(os.Environ(), "DIRLOCK_CHILD="+dir)
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	}
	release, err := dirlock.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := child(); got != 3 {
		t.Fatalf("TryLock in another process while the lock is held: exit %d, want 3 (ErrBusy)", got)
	}
	release()
	if got := child(); got != 0 {
		t.Fatalf("TryLock in another process after the release: exit %d, want 0", got)
	}
	if _, err := dirlock.TryLock(dir + "/missing"); err == nil || errors.Is(err, dirlock.ErrBusy) {
		t.Fatalf("TryLock of a missing directory: %v, want an error that is not ErrBusy", err)
	}
}
