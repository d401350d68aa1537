//go:build !unix

package job

// peakRSS is unknown on this system.
func peakRSS() int64 { return 0 }
