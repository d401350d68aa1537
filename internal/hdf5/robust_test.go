package hdf5

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fixtures lists the .h5 files of testdata.
func fixtures(t testing.TB) []string {
	names, err := filepath.Glob("testdata/*.h5")
	if err != nil || len(names) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	return names
}

// walk opens data, lists every group reachable from the root (at most maxObjects
// of them) and reads every dataset with a small limit. It reports the first error
// only through the returned count of failures; it must never panic.
func walk(data []byte, limit int) (datasets, failures int) {
	f, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return 0, 1
	}
	const maxObjects = 2000
	queue := []string{""}
	for len(queue) > 0 && datasets+len(queue) < maxObjects {
		g := queue[0]
		queue = queue[1:]
		names, err := f.List(g)
		if err != nil {
			failures++
			continue
		}
		for _, n := range names {
			p := g + "/" + n
			d, err := f.Dataset(p)
			if errors.Is(err, ErrNotFound) {
				if len(p) < 200 { // hard links may form cycles
					queue = append(queue, p)
				}
				continue
			}
			if err != nil {
				failures++
				continue
			}
			datasets++
			_ = d.Shape()
			if _, err := d.Float64s(limit); err != nil {
				failures++
				continue
			}
			// The conversions share the reading; try them on small data.
			if d.Len() <= 4096 {
				if _, err := d.Int64s(limit); err != nil {
					failures++
				}
				if _, err := d.Uint64s(limit); err != nil {
					failures++
				}
			}
		}
	}
	return datasets, failures
}

func TestWalkFixtures(t *testing.T) {
	for _, name := range fixtures(t) {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := walk(data, 0); n == 0 {
			t.Errorf("%s: no dataset read", name)
		}
	}
}

// TestTruncated cuts every fixture at many lengths: opening or reading must fail
// with an error (or succeed on what is left), never panic.
func TestTruncated(t *testing.T) {
	for _, name := range fixtures(t) {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		step := max(1, len(data)/400)
		for n := 0; n < len(data); n += step {
			if _, err := Open(bytes.NewReader(data[:n]), int64(n)); err == nil && n < len(data) {
				// The superblock records the end of file: a cut file must not open.
				t.Errorf("%s cut to %d bytes opened", name, n)
			}
		}
	}
}

// TestCorrupted flips bytes of every fixture, one position at a time, and walks
// the result: errors are fine, panics and hangs are not.
func TestCorrupted(t *testing.T) {
	for _, name := range fixtures(t) {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		// Every byte of the first 1 KiB (superblock, root group), then a
		// spread over the rest.
		step := max(1, len(data)/(300))
		if testing.Short() {
			step *= 4
		}
		buf := make([]byte, len(data))
		for i := 0; i < len(data); i = next(i, step) {
			for _, x := range []byte{0xff, 0x01, 0x80} {
				copy(buf, data)
				buf[i] ^= x
				walk(buf, 1<<16)
			}
		}
	}
}

// FuzzOpen opens arbitrary bytes, lists every group and reads every dataset. The
// seeds are the fixtures and the crashers found so far (testdata/fuzz). Run it
// with a short minimization time, or new inputs of the larger fixtures take a
// minute each to minimize:
//
//	go test ./internal/hdf5 -run '^$' -fuzz FuzzOpen -fuzztime 5m -fuzzminimizetime 2s
func FuzzOpen(f *testing.F) {
	for _, name := range fixtures(f) {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// A hang would stall the fuzzer without a report; crash instead so
		// that the input is saved.
		watchdog := time.AfterFunc(10*time.Second, func() { panic("walk took more than 10 s") })
		defer watchdog.Stop()
		walk(data, 1<<16)
	})
}

func next(i, step int) int {
	if i < 1024 {
		return i + 1
	}
	return i + step
}
