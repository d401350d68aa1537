// Package testutil holds the helpers that tests of several packages share: reading
// the reference tables in testdata and comparing energies.
package testutil

import (
	"math"
	"os"
	"strings"
	"testing"
)

// CloseTo reports whether energies a and b agree to the relative tolerance rel (with
// an absolute floor of rel near zero); +Inf equals only +Inf.
func CloseTo(a, b, rel float64) bool {
	if math.IsInf(a, 1) || math.IsInf(b, 1) {
		return a == b
	}
	return math.Abs(a-b) <= rel*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// ReadTSV returns the tab-separated rows of a file, failing the test if it is unreadable.
func ReadTSV(t testing.TB, path string) [][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		rows = append(rows, strings.Split(line, "\t"))
	}
	return rows
}
