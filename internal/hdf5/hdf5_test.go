package hdf5

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// expectedDataset is one dataset of testdata/expected.json.
type expectedDataset struct {
	Shape  []uint64      `json:"shape"`
	Dtype  string        `json:"dtype"`
	Values []json.Number `json:"values"`
}

func loadExpected(t testing.TB) map[string]map[string]expectedDataset {
	t.Helper()
	b, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var m map[string]map[string]expectedDataset
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func openFixture(t testing.TB, name string) *File {
	t.Helper()
	f, err := OpenFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// unreadable returns, for a fixture dataset outside the supported subset, the
// feature the error must name, and whether opening (true) or reading fails.
func unreadable(file, path string) (feature string, atOpen bool) {
	switch {
	case path == "v4/extensible":
		return "extensible array", false
	case path == "other/lzf":
		return "filter 32000", false
	case path == "other/str":
		return "string datatype", false
	}
	return "", false
}

// TestFixtures reads every dataset of every fixture and compares it with the
// values h5py wrote.
func TestFixtures(t *testing.T) {
	for file, datasets := range loadExpected(t) {
		t.Run(file, func(t *testing.T) {
			f := openFixture(t, file)
			for path, want := range datasets {
				t.Run(path, func(t *testing.T) {
					checkDataset(t, f, file, path, want)
				})
			}
		})
	}
}

func checkDataset(t *testing.T, f *File, file, path string, want expectedDataset) {
	feature, atOpen := unreadable(file, path)
	d, err := f.Dataset(path)
	if atOpen {
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), feature) {
			t.Fatalf("Dataset: %v, want ErrUnsupported naming %q", err, feature)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Shape(); !slices.Equal(got, want.Shape) && !(len(got) == 0 && len(want.Shape) == 0) {
		t.Fatalf("shape %v, want %v", got, want.Shape)
	}
	n := uint64(1)
	for _, x := range want.Shape {
		n *= x
	}
	if d.Len() != n {
		t.Fatalf("Len %d, want %d", d.Len(), n)
	}
	if feature != "" {
		_, err := d.Float64s(0)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), feature) || !strings.Contains(err.Error(), path) {
			t.Fatalf("Float64s: %v, want ErrUnsupported naming %q and the path", err, feature)
		}
		return
	}
	kind := want.Dtype[1:2]
	switch kind {
	case "u", "i":
		if d.Class() != FixedPoint {
			t.Fatalf("class %v", d.Class())
		}
		if kind == "u" {
			got, err := d.Uint64s(int(n))
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range want.Values {
				x, err := strconv.ParseUint(w.String(), 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				if got[i] != x {
					t.Fatalf("element %d: %d, want %d", i, got[i], x)
				}
			}
		} else {
			got, err := d.Int64s(int(n))
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range want.Values {
				x, err := strconv.ParseInt(w.String(), 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				if got[i] != x {
					t.Fatalf("element %d: %d, want %d", i, got[i], x)
				}
			}
		}
	case "f":
		if d.Class() != FloatingPoint {
			t.Fatalf("class %v", d.Class())
		}
		if _, err := d.Int64s(0); err == nil {
			t.Fatal("Int64s of floats succeeded")
		}
	default:
		t.Fatalf("dtype %s in expected.json", want.Dtype)
	}
	got, err := d.Float64s(int(n))
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(got)) != n {
		t.Fatalf("%d values, want %d", len(got), n)
	}
	for i, w := range want.Values {
		x, err := strconv.ParseFloat(w.String(), 64)
		if err != nil {
			t.Fatal(err)
		}
		if got[i] != x || math.Signbit(got[i]) != math.Signbit(x) {
			t.Fatalf("element %d: %v, want %v", i, got[i], x)
		}
	}
}
