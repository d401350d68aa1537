//go:build unix

package job

import (
	"runtime"
	"syscall"
)

// peakRSS is the process's peak resident set size in bytes (0 when unknown).
func peakRSS() int64 {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return u.Maxrss // bytes there, kilobytes elsewhere
	}
	return u.Maxrss * 1024
}
