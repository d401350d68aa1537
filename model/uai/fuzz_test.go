package uai_test

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/model/uai"
)

// FuzzRead feeds arbitrary bytes to the UAI, LG and WCSP readers. Whatever the input,
// a reader returns a valid model or an error: no panic, no hang, no allocation beyond
// what the input holds. Seeds: the committed fixtures and, when present, the small (≤ 16 KiB)
// shared benchmark models. Run: go test ./model/uai -run XXX -fuzz FuzzRead -fuzzminimizetime 5s -fuzztime 5m
func FuzzRead(f *testing.F) {
	var seeds []string
	models := testutil.SharedPath("models") // absent: no seeds from it
	for _, pattern := range []string{fixtures + "/*.uai", fixtures + "/*.LG", models + "/*/*.uai",
		models + "/*/*/*.uai", models + "/*/*.wcsp", models + "/*/*/*.uai.evid"} {
		matches, _ := filepath.Glob(pattern)
		seeds = append(seeds, matches...)
	}
	for _, path := range seeds {
		if st, err := os.Stat(path); err == nil && st.Size() <= 16<<10 {
			data, _ := os.ReadFile(path)
			f.Add(data)
		}
	}
	f.Add([]byte("p 2 2 1 10\n2 2\n2 0 1 3 1\n0 1 5\n"))
	f.Add([]byte("MARKOV\n1\n2\n1\n1 0\n2\n0 inf\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range []uai.Format{uai.UAI, uai.LG, uai.WCSP} {
			m, err := uai.Read(bytes.NewReader(data), "fuzz", format)
			if err != nil {
				if !strings.HasPrefix(err.Error(), "fuzz") {
					t.Fatalf("%v: error %q does not name the input", format, err)
				}
				continue
			}
			if err := m.Validate(); err != nil {
				t.Fatalf("%v: read a model that does not validate: %v", format, err)
			}
			if e := m.Energy(make([]int, m.NumVars())); math.IsNaN(e) || math.IsInf(e, -1) {
				t.Fatalf("%v: energy %v", format, e)
			}
		}
		if ev, err := uai.ReadEvidence(bytes.NewReader(data), "fuzz"); err == nil && len(ev.Vars) != len(ev.Labels) {
			t.Fatalf("evidence with %d variables and %d labels", len(ev.Vars), len(ev.Labels))
		}
		uai.ReadSolution(bytes.NewReader(data), "fuzz", -1)
	})
}
