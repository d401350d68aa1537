package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/labelfile"
)

// TestResultDirectoryIsCheckedBeforeTheModel is issue 34 as reported: `partopt
// verify giga.grid out`, with no out, read the model into memory and was
// killed. Here the binary, under a 2 GB address-space limit (ulimit -v, as an
// operator would cap it), is given a .grid of 2^25 pixels — twice the
// in-memory bound, gigabytes once read, a sparse file on disk — and a missing
// or empty directory, a missing labeling, a solution file that would need the
// model whole: each is one line naming the path, exit 2, the model unread.
// Reading the model whole takes more than the limit (the least of info's
// estimates, from the header), so the limit is below what a read takes.
func TestResultDirectoryIsCheckedBeforeTheModel(t *testing.T) {
	dir := t.TempDir()
	capped := cappedBinary(t, dir)
	giga := filepath.Join(dir, "giga.grid")
	writeZeroGrid(t, giga, 8192, 4096)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	sol := filepath.Join(dir, "labels.sol")
	os.WriteFile(sol, []byte("MPE\n1 0\n"), 0o644)
	if s, err := grid.Describe(giga); err != nil || s.MinMemoryBytes <= addressSpaceLimit<<10 {
		t.Fatalf("reading the model whole takes at least %d bytes (%v), within the limit: the limit does not show that the commands below leave it unread", s.MinMemoryBytes, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"verify", giga, filepath.Join(dir, "out")}, "result directory " + filepath.Join(dir, "out") + ": no such file or directory"},
		{[]string{"verify", giga, empty}, empty + ": no report.json: not a partopt result directory"},
		{[]string{"energy", giga, filepath.Join(dir, "none.sol")}, "labeling " + filepath.Join(dir, "none.sol") + ": no such file or directory"},
		{[]string{"energy", giga, sol}, "too large to read into memory"},
		{[]string{"reduce", giga, empty, "-o", filepath.Join(dir, "r.uai")}, empty + ": no report.json"},
	} {
		code, _, stderr := capped(c.args...)
		if code != exitBadInput || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "partopt: ") || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line saying %q", c.args, code, stderr, c.want)
		}
	}
}

// TestCheapChecksFailBeforeTheModelIsRead: verify, energy, export and reduce
// check the result directory and the files they need — present, their
// headers readable, agreeing with each other and with the .grid model's
// header — before they read the model: given a model whose tiles are damaged
// past its header, each bad directory or file is one line about that
// directory or file, exit 2, never the damage, which the same commands do
// report once the directory is right.
func TestCheapChecksFailBeforeTheModelIsRead(t *testing.T) {
	gp, up := genGrid(t, "3")
	res := solveOut(t, gp)                      // windowed pbp+iri: label files, domains.txt
	pbp := solveOut(t, gp, "--method", "pbp")   // windowed pbp: no domains.txt
	whole := solveOut(t, up, "--method", "pbp") // whole: certificate.gob
	trws := solveOut(t, up, "--method", "trws") // no proof
	damaged := filepath.Join(t.TempDir(), "damaged.grid")
	data, err := os.ReadFile(gp)
	if err != nil {
		t.Fatal(err)
	}
	data[grid.HeaderSize+16] ^= 0x55 // in the first tile: its checksum fails when read
	os.WriteFile(damaged, data, 0o644)
	other := filepath.Join(t.TempDir(), "other.grid") // 5×5 pixels, damaged too
	writeZeroGrid(t, other, 5, 5)
	if data, err = os.ReadFile(other); err != nil {
		t.Fatal(err)
	}
	data[grid.HeaderSize+16] ^= 0x55
	os.WriteFile(other, data, 0o644)

	// Control: with the directory right, the damaged model is read and reported.
	for _, args := range [][]string{
		{"verify", damaged, res},
		{"energy", damaged, filepath.Join(res, labelTilesFile)},
		{"reduce", damaged, res, "-o", filepath.Join(t.TempDir(), "r.uai")},
	} {
		if code, _, stderr := partopt(args...); code != exitBadInput || !strings.Contains(stderr, "corrupt grid file") {
			t.Fatalf("%v: exit %d, %q; want the damaged model reported", args, code, stderr)
		}
	}

	scratch := func(t *testing.T) string { return t.TempDir() }
	copyOf := func(from string, drop ...string) func(t *testing.T) string {
		return func(t *testing.T) string {
			dir := filepath.Join(t.TempDir(), "out")
			copyDir(t, from, dir)
			for _, name := range drop {
				os.Remove(filepath.Join(dir, name))
			}
			return dir
		}
	}
	with := func(from string, files map[string]string, drop ...string) func(t *testing.T) string {
		return func(t *testing.T) string {
			dir := copyOf(from, drop...)(t)
			for name, content := range files {
				os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
			}
			return dir
		}
	}
	swapped := func(t *testing.T) string { // labels.plf replaced by the persistent map
		dir := copyOf(res)(t)
		data, _ := os.ReadFile(filepath.Join(dir, persistentTilesFile))
		os.WriteFile(filepath.Join(dir, labelTilesFile), data, 0o644)
		return dir
	}
	file := func(name, content string) func(t *testing.T) string {
		return func(t *testing.T) string {
			path := filepath.Join(t.TempDir(), name)
			os.WriteFile(path, []byte(content), 0o644)
			return path
		}
	}
	fixed := func(path string) func(t *testing.T) string { return func(*testing.T) string { return path } }
	smallRaster := func(t *testing.T) string {
		path := filepath.Join(t.TempDir(), "labels.plf")
		f, err := labelfile.Create(path, labelfile.Header{Width: 5, Height: 5, Labels: 4, Kind: labelfile.Labeling})
		if err != nil || f.Close() != nil {
			t.Fatal(err)
		}
		return path
	}
	nowhere := filepath.Join(t.TempDir(), "nowhere")
	cases := []struct {
		name  string
		cmd   string
		model string                    // verify, energy, reduce
		arg   func(t *testing.T) string // the directory or file
		more  []string                  // further arguments
		want  string                    // in the message; %s is the argument
	}{
		{name: "missing directory", cmd: "verify", arg: fixed(nowhere), want: "result directory %s: no such file or directory"},
		{name: "a file for the directory", cmd: "verify", arg: file("labels.sol", "MPE\n1 0\n"), want: "result directory %s is a file, not a directory"},
		{name: "empty directory", cmd: "verify", arg: scratch, want: "%s: no report.json: not a partopt result directory"},
		{name: "report.json not a report", cmd: "verify", arg: with(res, map[string]string{reportFile: "{"}), want: "report.json: not a partopt report"},
		{name: "windowed result without certificates", cmd: "verify", arg: copyOf(res, windowCertificatesFile), want: "windowed result without its window-certificates.bin"},
		{name: "certificates not certificates", cmd: "verify", arg: with(res, map[string]string{windowCertificatesFile: "hello"}), want: "not a window certificates file"},
		{name: "no persistent outputs", cmd: "verify", arg: copyOf(res, persistentFile, persistentTilesFile), want: "nothing claims persistent labels"},
		{name: "labels.plf not a labeling", cmd: "verify", arg: swapped, want: "labels.plf: a persistent map, where the result has a labeling map"},
		{name: "labels.plf not a label file", cmd: "verify", arg: with(res, map[string]string{labelTilesFile: "hello"}), want: "corrupt label file"},
		{name: "certificate.gob not a certificate", cmd: "verify", arg: with(whole, map[string]string{certificateFile: "hello"}), want: "certificate.gob: not a result file"},
		{name: "a whole run without persistent.evid", cmd: "verify", arg: copyOf(whole, persistentFile), want: "persistent.evid: no such file or directory (the run that wrote certificate.gob writes it)"},
		{name: "a trws result", cmd: "verify", arg: copyOf(trws), want: "certificate.gob: no such file or directory (partopt solve --method pbp writes it): a trws run proves no persistency"},
		{name: "a result of another model", cmd: "verify", model: other, arg: copyOf(res), want: "a result of another model"},

		{name: "missing labeling", cmd: "energy", arg: fixed(filepath.Join(nowhere, "labels.sol")), want: "labeling %s: no such file or directory"},
		{name: "a result directory for the labeling", cmd: "energy", arg: copyOf(res), want: "labeling %s is a directory: give its labeling file"},
		{name: "an empty directory for the labeling", cmd: "energy", arg: scratch, want: "labeling %s is a directory, not a labeling file"},
		{name: "persistent.plf for the labeling", cmd: "energy", arg: fixed(filepath.Join(res, persistentTilesFile)), want: "%s: a persistent map, not a labeling"},
		{name: "text that is not a labeling", cmd: "energy", arg: file("labels.sol", "hello world\n"), want: `%s: starts with "hello": not a labeling`},
		{name: "an empty labeling", cmd: "energy", arg: file("labels.sol", ""), want: "%s: empty file: not a labeling"},
		{name: "a .plf that is not a label file", cmd: "energy", arg: file("labels.plf", "hello"), want: "corrupt label file"},
		{name: "a labeling of another size", cmd: "energy", arg: smallRaster, want: "%s: 5×5 pixels, the model has 384 variables"},

		{name: "missing directory", cmd: "export", arg: fixed(nowhere), more: []string{"-o", "x.png"}, want: "result %s: no such file or directory"},
		{name: "empty directory", cmd: "export", arg: scratch, more: []string{"-o", "x.png"}, want: "%s: no report.json: not a partopt result directory"},
		{name: "no labels.plf", cmd: "export", arg: copyOf(res, labelTilesFile, labelsFile), more: []string{"-o", "x.png"}, want: "labels.plf: no such file or directory"},
		{name: "no persistent.plf", cmd: "export", arg: copyOf(res, persistentTilesFile), more: []string{"-o", "x.png", "--persistent"}, want: "persistent.plf: no such file or directory"},
		{name: "labels.sol for a label file", cmd: "export", arg: fixed(filepath.Join(res, labelsFile)), more: []string{"-o", "x.png"}, want: "%s: not a label file (.plf)"},
		{name: "no output directory", cmd: "export", arg: fixed(res), more: []string{"-o", filepath.Join(nowhere, "x.png")}, want: "output " + filepath.Join(nowhere, "x.png") + ": directory " + nowhere + ": no such file or directory"},

		{name: "missing directory", cmd: "reduce", arg: fixed(nowhere), more: []string{"-o", "r.uai"}, want: "result directory %s: no such file or directory"},
		{name: "empty directory", cmd: "reduce", arg: scratch, more: []string{"-o", "r.uai"}, want: "%s: no report.json: not a partopt result directory"},
		{name: "no domains.txt", cmd: "reduce", arg: copyOf(pbp), more: []string{"-o", "r.uai"}, want: "domains.txt: no such file or directory (partopt solve --method iri or pbp+iri writes it)"},
		{name: "domains.txt not a domains file", cmd: "reduce", arg: with(res, map[string]string{domainsFile: "hello\n"}), more: []string{"-o", "r.uai"}, want: `domains.txt: line 1: "hello": want the number of variables`},
		{name: "domains.txt of another model", cmd: "reduce", arg: with(res, map[string]string{domainsFile: "25\n"}), more: []string{"-o", "r.uai"}, want: "domains.txt: 25 variables, but " + damaged + " has 24×16 pixels: a result of another model"},
		{name: "no output directory", cmd: "reduce", arg: fixed(res), more: []string{"-o", filepath.Join(nowhere, "r.uai")}, want: "output " + filepath.Join(nowhere, "r.uai") + ": directory " + nowhere},
	}
	for _, c := range cases {
		t.Run(c.cmd+"/"+c.name, func(t *testing.T) {
			arg := c.arg(t)
			args := []string{c.cmd}
			if c.cmd != "export" {
				m := c.model
				if m == "" {
					m = damaged
				}
				args = append(args, m)
			}
			args = append(args, arg)
			out := t.TempDir()
			for i, a := range c.more {
				if i > 0 && c.more[i-1] == "-o" && !filepath.IsAbs(a) {
					a = filepath.Join(out, a)
				}
				args = append(args, a)
			}
			want := c.want
			if strings.Contains(want, "%s") {
				want = fmt.Sprintf(want, arg)
			}
			code, stdout, stderr := partopt(args...)
			if code != exitBadInput || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "partopt: ") || !strings.Contains(stderr, want) {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line saying %q", args, code, stdout, stderr, want)
			}
			if strings.Contains(stderr, "corrupt grid file") {
				t.Errorf("%v: %q: the model was read before the directory was checked", args, stderr)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("%v left %d files in the output's directory", args, len(entries))
			}
		})
	}
}

// solveOut runs solve with args on modelPath into a fresh directory.
func solveOut(t *testing.T, modelPath string, args ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := partopt(append([]string{"solve", modelPath, "-o", dir}, args...)...); code != 0 {
		t.Fatalf("solve %s %v: %s", modelPath, args, stderr)
	}
	return dir
}

// writeZeroGrid writes a w×h .grid model of 2 labels, zero unaries and Potts
// edges, as a sparse file: the zero tiles are skipped, not written, so a
// model of gigabytes takes a few megabytes of disk.
func writeZeroGrid(t *testing.T, path string, w, h int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gw, err := grid.NewWriter(sparseFile{f}, grid.Header{Width: w, Height: h, Labels: 2, Connectivity: 4, Kind: model.Potts, Mode: grid.Shared, W: 1})
	if err != nil {
		t.Fatal(err)
	}
	const band = 128
	rows := make([]float32, band*w*2)
	for y := 0; y < h; y += band {
		k := min(band, h-y)
		if err := gw.WriteRows(rows[:k*w*2], nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := gw.Close(); err != nil {
		t.Fatal(err)
	}
}

// sparseFile seeks over writes of zeros (a hole reads as zeros).
type sparseFile struct{ *os.File }

func (s sparseFile) Write(b []byte) (int, error) {
	if len(bytes.TrimLeft(b, "\x00")) > 0 {
		return s.File.Write(b)
	}
	if _, err := s.Seek(int64(len(b)), io.SeekCurrent); err != nil {
		return 0, err
	}
	return len(b), nil
}
