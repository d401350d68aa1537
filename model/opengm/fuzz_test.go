package opengm

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// FuzzRead: arbitrary bytes as an HDF5 file (seeded with the fixtures) never panic,
// hang or allocate beyond the file's data; a model that reads is valid.
func FuzzRead(f *testing.F) {
	names, _ := filepath.Glob(filepath.Join("testdata", "*.h5"))
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Read(bytes.NewReader(data), int64(len(data)), "fuzz.h5")
		if err == nil {
			if err := m.Validate(); err != nil {
				t.Fatalf("a model that reads is invalid: %v", err)
			}
		}
	})
}

// FuzzDecode: arbitrary dataset contents in OpenGM's layout (the header's version
// kept, its counts small) never panic and never allocate beyond the data and
// MaxExpanded; a model that decodes is valid.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{1, 2, 1, 0, 6, 1, 2, 3, 1, 2, 0, 0, 2, 0, 1}, []byte{0, 0, 0, 64})
	f.Add([]byte{2, 2, 1, 7, 2, 2, 3, 0, 0, 2, 0, 1}, []byte{1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, ints []byte, floats []byte) {
		// Small integers: counts and labels that fit a quick run.
		u := make([]uint64, len(ints))
		for i, b := range ints {
			u[i] = uint64(b % 16)
		}
		vals := make([]float64, 0, len(floats)/2)
		for i := 0; i+1 < len(floats); i += 2 {
			v := float64(int16(binary.LittleEndian.Uint16(floats[i:]))) / 8
			if floats[i] == 0xff {
				v = math.Inf(1)
			}
			vals = append(vals, v)
		}
		if len(u) < 3 {
			return
		}
		nVars, nFactors := u[0], u[1]
		typ := uint64(Explicit) + u[2]%9
		src := mapSource{u: map[string][]uint64{}, f: map[string][]float64{}}
		src.u["header"] = []uint64{2, 0, nVars, nFactors, 1, typ, 1 + u[2]%3, 1}
		rest := u[3:]
		take := func(n uint64) []uint64 {
			n = min(n, uint64(len(rest)))
			out := rest[:n]
			rest = rest[n:]
			return out
		}
		src.u["numbers-of-states"] = take(nVars)
		g := "function-id-" + strconv.FormatUint(typ, 10) + "/"
		src.u[g+"indices"] = take(uint64(len(rest)) / 2)
		src.f[g+"values"] = vals
		src.u["factors"] = rest
		m, err := Decode(src)
		if err == nil {
			if err := m.Validate(); err != nil {
				t.Fatalf("a model that decodes is invalid: %v", err)
			}
		}
	})
}
