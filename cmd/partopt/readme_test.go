package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeCommandsRunAsWritten: the README's commands on its bundled model —
// its first command (run by windows), then the whole solve and the verify it
// names — run as written, in the README's order, from a directory laid out as
// the repository's root (its testdata), each exiting 0; the first ends with
// the labeling proven optimal and writes the files the README lists, byte for
// byte those of solve --window 16 --halo 8 but the report.
func TestReadmeCommandsRunAsWritten(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var commands [][]string
	for _, m := range regexp.MustCompile("(?:go run \\./cmd/partopt|partopt) ((?:run|solve|verify) testdata/[^`\\n#]*)").FindAllSubmatch(readme, -1) {
		commands = append(commands, strings.Fields(string(m[1])))
	}
	if len(commands) < 3 || commands[0][0] != "run" {
		t.Fatalf("the README's commands on testdata: %q; want its first command (run) and then others", commands)
	}
	testdata, err := filepath.Abs(fixtures)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.Symlink(testdata, filepath.Join(root, "testdata")); err != nil {
		t.Skipf("no symlink to lay out the repository's testdata: %v", err)
	}
	want := t.TempDir()
	if code, _, stderr := partopt("solve", filepath.Join(testdata, "denoise32.uai.gz"), "-o", want, "--window", "16", "--halo", "8"); code != 0 {
		t.Fatalf("solve --window 16 --halo 8: %s", stderr)
	}
	t.Chdir(root)
	for i, args := range commands {
		code, stdout, stderr := partopt(args...)
		if code != 0 {
			t.Fatalf("partopt %s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
		t.Logf("partopt %s: %s", strings.Join(args, " "), strings.TrimSpace(stdout))
		if i > 0 {
			continue
		}
		if !strings.HasSuffix(strings.TrimSpace(stdout), " optimal (every variable persistent)") {
			t.Errorf("the first command's summary %q does not end as the README says, with the labeling proven optimal", stdout)
		}
		for _, name := range []string{"persistency.png", "labels.plf", "persistent.plf", "alive.plf", "labels.sol", "optimal.sol", "persistent.evid", "domains.txt", "report.json"} {
			got, err := os.ReadFile(filepath.Join(root, "out", name))
			if err != nil {
				t.Errorf("the README's first command wrote no %s: %v", name, err)
				continue
			}
			if name == "report.json" {
				continue
			}
			if exp, err := os.ReadFile(filepath.Join(want, name)); err != nil || !bytes.Equal(got, exp) {
				t.Errorf("%s differs from solve --window 16 --halo 8's (%v)", name, err)
			}
		}
	}
}
