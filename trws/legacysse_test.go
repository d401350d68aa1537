package trws

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAssemblyUsesNoLegacySSE keeps every instruction on an X register of the
// assembly VEX-encoded. A legacy SSE instruction (MOVL AX, X7 is MOVD; MOVSS)
// between AVX instructions whose upper halves are live costs a state
// transition on Intel CPUs that keep that penalty (and in VMs that expose
// them so): on a Xeon with AVX-512 the stereo passes ran 17× slower and the
// Potts passes 2.6–4.2× slower than with the VEX forms (docs/BENCHMARKS.md,
// 2026-11-27), while AMD CPUs hid it. The VEX forms compute the same.
func TestAssemblyUsesNoLegacySSE(t *testing.T) {
	files, err := filepath.Glob("*.s")
	if err != nil || len(files) == 0 {
		t.Fatalf("no assembly files found (%v)", err)
	}
	xreg := regexp.MustCompile(`\bX([0-9]|1[0-5])\b`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			code, _, _ := strings.Cut(line, "//")
			for _, ins := range strings.Split(code, ";") {
				fields := strings.Fields(strings.TrimSuffix(strings.TrimSpace(ins), `\`))
				if len(fields) < 2 || strings.HasSuffix(fields[0], ":") || strings.HasPrefix(fields[0], "#") || strings.Contains(fields[0], "(") {
					continue
				}
				op := fields[0]
				if !xreg.MatchString(strings.Join(fields[1:], " ")) || strings.HasPrefix(op, "V") || strings.HasPrefix(op, "K") {
					continue
				}
				t.Errorf("%s:%d: legacy SSE instruction %q: use its VEX form", f, i+1, strings.TrimSpace(ins))
			}
		}
	}
}
