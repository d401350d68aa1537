package hdf5

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error of this package (but for the reader's own I/O
// errors) wraps one of them or expansion.ErrBomb, and its message starts with
// "hdf5:" and names the object (path) or the file offset it concerns.
var (
	// ErrFormat reports a malformed file: a bad signature, a length or offset
	// outside the file, a structure that contradicts itself.
	ErrFormat = errors.New("malformed file")
	// ErrUnsupported reports a valid HDF5 feature outside the subset this package
	// reads; the message names the feature.
	ErrUnsupported = errors.New("unsupported feature")
	// ErrLimit reports a dataset with more elements than the caller's limit.
	// One that needs more memory than the file's size allows wraps
	// expansion.ErrBomb instead (see MaxExpansion).
	ErrLimit = errors.New("dataset too large")
	// ErrNotFound reports a path that names no member, or a group where a
	// dataset was asked for.
	ErrNotFound = errors.New("not found")
	// ErrConversion reports values that the requested Go type cannot hold:
	// negative integers as uint64, integers above math.MaxInt64 as int64,
	// floating-point data as integers.
	ErrConversion = errors.New("value does not convert")
)

// formatErr returns an error wrapping ErrFormat.
func formatErr(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrFormat)...)
}

// unsupportedErr returns an error wrapping ErrUnsupported.
func unsupportedErr(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrUnsupported)...)
}
