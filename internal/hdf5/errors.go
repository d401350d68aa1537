package hdf5

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error of this package wraps exactly one of them and names
// the object (path) or the file offset it concerns.
var (
	// ErrFormat reports a malformed file: a bad signature, a length or offset
	// outside the file, a structure that contradicts itself.
	ErrFormat = errors.New("hdf5: malformed file")
	// ErrUnsupported reports a valid HDF5 feature outside the subset this package
	// reads; the message names the feature.
	ErrUnsupported = errors.New("hdf5: unsupported feature")
	// ErrLimit reports a dataset with more elements than the caller's limit, or
	// more bytes than the file could plausibly hold (see MaxExpansion).
	ErrLimit = errors.New("hdf5: dataset too large")
	// ErrNotFound reports a path that names no member.
	ErrNotFound = errors.New("hdf5: not found")
)

// formatErr returns an error wrapping ErrFormat.
func formatErr(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrFormat)...)
}

// unsupportedErr returns an error wrapping ErrUnsupported.
func unsupportedErr(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrUnsupported)...)
}
