package worker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/worker"
)

// TestSharedPathOnlyBelowTheRoots: a job's shared model path is read only when it
// resolves, links followed, to a file below one of the roots.
func TestSharedPathOnlyBelowTheRoots(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	inside, outside := filepath.Join(root, "sub", "m.uai"), filepath.Join(other, "m.uai")
	for _, p := range []string{inside, outside} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil || os.WriteFile(p, []byte("MARKOV"), 0o644) != nil {
			t.Fatal(err)
		}
	}
	in, out := filepath.Join(root, "in.uai"), filepath.Join(root, "out.uai")
	if os.Symlink(inside, in) != nil || os.Symlink(outside, out) != nil {
		t.Fatal("symlinks")
	}
	real, _ := filepath.EvalSymlinks(inside)
	for _, c := range []struct {
		roots      []string
		path, want string // want: the error's words, or "" for the resolved inside file
	}{
		{[]string{root}, inside, ""},
		{[]string{other, root}, in, ""},
		{[]string{root}, outside, "outside the shared roots"},
		{[]string{root}, out, "outside the shared roots"},
		{[]string{root}, root, "outside the shared roots"},
		{[]string{root}, root + "/sub/../../" + filepath.Base(other) + "/m.uai", "not absolute and clean"},
		{[]string{root}, "sub/m.uai", "not absolute and clean"},
		{[]string{root}, filepath.Join(root, "none.uai"), "does not name a readable file"},
		{nil, inside, "shares none"},
	} {
		got, err := worker.SharedPath(c.roots, c.path)
		switch {
		case c.want == "" && (err != nil || got != real):
			t.Errorf("roots %v, %s: %q, %v; want %s", c.roots, c.path, got, err, real)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("roots %v, %s: %q, %v; want an error saying %q", c.roots, c.path, got, err, c.want)
		}
	}
}
