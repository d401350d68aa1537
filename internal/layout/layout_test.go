package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// modulePath is the module the table describes; paths in the table without a dot
// in their first element are relative to it.
const modulePath = "github.com/partopt/partopt"

// docFile is the architecture page, relative to the module root.
const docFile = "docs/ARCHITECTURE.md"

// exempt lists the packages of the module that need not appear in the first column
// of the table (patterns as in the table: module-relative, `X/...` is X and
// everything below it). Every other package must have a row, so a new package
// cannot skip the table. The rules of the rows that do name an exempt package
// still apply to it.
var exempt = []string{
	"cmd/...",            // commands: the top of the graph; that nothing imports them is checked on its own
	"deploy/...",         // deployment files (configs, scripts); their only Go code is their tests
	"internal/layout",    // this test
	"internal/testutil",  // helpers that only tests import
	"internal/mkfixture", // the program that writes the testdata fixtures
	"internal/header",    // the binary header frame below model/grid and model/labelfile; imports only the standard library
}

// rule is one row of the Packages table: none of packages may depend on anything
// forbidden matches.
type rule struct {
	line      int      // 1-based line of the row in the page
	packages  []string // first column, as written (module-relative)
	forbidden []string // third column, as written; none for —
}

// parseTable returns the rows of the first markdown table after the heading line
// starting with "## Packages". The table has the columns package, owns and must not
// import; the first holds comma-separated backticked package paths, the third
// comma-separated backticked import paths or — for nothing.
func parseTable(markdown string) ([]rule, error) {
	lines := strings.Split(markdown, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], "\r")
	}
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "## Packages") })
	if i < 0 {
		return nil, errors.New(`no heading line starting with "## Packages"`)
	}
	for i++; i < len(lines) && !isRow(lines[i]); i++ {
		if strings.HasPrefix(lines[i], "#") {
			return nil, fmt.Errorf("line %d: a heading before any table under ## Packages", i+1)
		}
	}
	if i == len(lines) {
		return nil, errors.New("no table under ## Packages")
	}
	if got := splitRow(lines[i]); !slices.Equal(got, []string{"package", "owns", "must not import"}) {
		return nil, fmt.Errorf("line %d: the header is %q, want | package | owns | must not import |", i+1, got)
	}
	i++
	if i == len(lines) || !isSeparator(lines[i]) {
		return nil, fmt.Errorf("line %d: no |---|---|---| line under the header", i+1)
	}
	var rules []rule
	for i++; i < len(lines) && isRow(lines[i]); i++ {
		cells := splitRow(lines[i])
		if len(cells) != 3 {
			return nil, fmt.Errorf("line %d: %d cells, want 3 (package | owns | must not import)", i+1, len(cells))
		}
		r := rule{line: i + 1}
		var err error
		if r.packages, err = parsePaths(cells[0]); err != nil {
			return nil, fmt.Errorf("line %d: package column: %v", i+1, err)
		}
		for _, p := range r.packages {
			if strings.Contains(p, "...") {
				return nil, fmt.Errorf("line %d: package column: `%s`: name each package, no /...", i+1, p)
			}
		}
		if cells[2] != "—" {
			if r.forbidden, err = parsePaths(cells[2]); err != nil {
				return nil, fmt.Errorf("line %d: must-not-import column (— for nothing): %v", i+1, err)
			}
		}
		rules = append(rules, r)
	}
	if len(rules) == 0 {
		return nil, errors.New("the table under ## Packages has no rows")
	}
	return rules, nil
}

func isRow(line string) bool { return strings.HasPrefix(strings.TrimSpace(line), "|") }

// isSeparator reports whether line is a table's |---|---| line.
func isSeparator(line string) bool {
	cells := splitRow(line)
	for _, c := range cells {
		if strings.Trim(c, ":-") != "" || !strings.Contains(c, "-") {
			return false
		}
	}
	return len(cells) > 0
}

// splitRow returns the trimmed cells of a table row.
func splitRow(line string) []string {
	s := strings.TrimSpace(line)
	s = strings.TrimPrefix(s, "|")
	s = strings.TrimSuffix(s, "|")
	cells := strings.Split(s, "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// parsePaths returns the paths of a cell of comma-separated backticked paths.
func parsePaths(cell string) ([]string, error) {
	if cell == "" {
		return nil, errors.New("empty")
	}
	var paths []string
	for item := range strings.SplitSeq(cell, ",") {
		item = strings.TrimSpace(item)
		p, ok := strings.CutPrefix(item, "`")
		if ok {
			p, ok = strings.CutSuffix(p, "`")
		}
		if !ok || p == "" || strings.ContainsAny(p, "` \t") {
			return nil, fmt.Errorf("%q is not one backticked path", item)
		}
		dots := strings.Contains(p, "...")
		if strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//") ||
			dots && (p == "..." || strings.Count(p, "...") > 1 || !strings.HasSuffix(p, "/...")) {
			return nil, fmt.Errorf("`%s` is not an import path or a path ending in /...", p)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// resolve returns the full import path (or pattern) of a path of the table: one
// without a dot in its first element is relative to the module.
func resolve(path string) string {
	first, _, _ := strings.Cut(path, "/")
	if strings.Contains(first, ".") {
		return path
	}
	return modulePath + "/" + path
}

// matches reports whether importPath (a full import path) matches pattern (a path
// of the table): the path itself, or for `X/...` X and every path below it.
func matches(pattern, importPath string) bool {
	pattern = resolve(pattern)
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return importPath == base || strings.HasPrefix(importPath, base+"/")
	}
	return importPath == pattern
}

// pkg is what the test reads of a package from `go list -json`.
type pkg struct {
	ImportPath string
	Imports    []string // direct, non-test
	Deps       []string // transitive, non-test
	Error      *struct{ Err string }
	DepsErrors []*struct{ Err string }
}

// goList lists the packages of the module at root with one `go list`.
func goList(t *testing.T, root string) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Deps,Error,DepsErrors", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []pkg
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list: decoding its output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list ./... in %s listed no packages", root)
	}
	return pkgs
}

// checkLayout returns every way pkgs (the packages of the module) break rules (the
// table of the page doc): a package that depends on a path its row forbids, a
// package that imports a command, a row that names no package of the module or
// forbids a module path that matches none, a package that no row names.
func checkLayout(doc string, rules []rule, pkgs []pkg) []string {
	index := make(map[string]*pkg, len(pkgs))
	for i := range pkgs {
		index[pkgs[i].ImportPath] = &pkgs[i]
	}
	var problems []string
	listed := map[string]bool{}
	for _, r := range rules {
		for _, f := range r.forbidden {
			if !strings.HasPrefix(resolve(f), modulePath+"/") {
				continue
			}
			if !slices.ContainsFunc(pkgs, func(p pkg) bool { return matches(f, p.ImportPath) }) {
				problems = append(problems, fmt.Sprintf("%s:%d: the row forbids `%s`, which matches no package of the module (go list ./...)", doc, r.line, f))
			}
		}
		for _, name := range r.packages {
			p := index[resolve(name)]
			if p == nil {
				problems = append(problems, fmt.Sprintf("%s:%d: `%s` is not a package of the module (go list ./...)", doc, r.line, name))
				continue
			}
			listed[p.ImportPath] = true
			for _, f := range r.forbidden {
				var bad []string
				for _, d := range p.Deps {
					if matches(f, d) {
						bad = append(bad, d)
					}
				}
				if len(bad) == 0 {
					continue
				}
				// Name the offending path with the shortest chain through the module.
				var dep string
				var via []string
				for _, d := range bad {
					c := chain(index, p.ImportPath, d)
					if via == nil || chainCost(c) < chainCost(via) {
						dep, via = d, c
					}
				}
				more := ""
				if len(bad) > 1 {
					more = fmt.Sprintf(" (and %d more it matches)", len(bad)-1)
				}
				problems = append(problems, fmt.Sprintf("%s:%d: `%s` must not import `%s`, but depends on %s: %s%s",
					doc, r.line, name, f, dep, strings.Join(via, " → "), more))
			}
		}
	}
	for _, p := range pkgs {
		for _, d := range p.Deps {
			if matches("cmd/...", d) {
				problems = append(problems, fmt.Sprintf("%s depends on %s: nothing imports a command under cmd/ (%s)",
					p.ImportPath, d, strings.Join(chain(index, p.ImportPath, d), " → ")))
			}
		}
	}
	for _, p := range pkgs {
		if !listed[p.ImportPath] && !slices.ContainsFunc(exempt, func(e string) bool { return matches(e, p.ImportPath) }) {
			problems = append(problems, fmt.Sprintf("%s: no row of the Packages table names %s: add a row with what it must not import (or —)", doc, p.ImportPath))
		}
	}
	return problems
}

// chain returns a shortest import chain from package from to its dependency dep
// through packages of the module, in module-relative names; "…" stands for
// packages outside the module when dep is reached only through them.
func chain(index map[string]*pkg, from, dep string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	end, direct := from, false
	for len(queue) > 0 && !direct {
		n := queue[0]
		queue = queue[1:]
		if slices.Contains(index[n].Imports, dep) {
			end, direct = n, true
			break
		}
		for _, imp := range index[n].Imports {
			if q, ok := index[imp]; ok && slices.Contains(q.Deps, dep) {
				if _, seen := prev[imp]; !seen {
					prev[imp] = n
					queue = append(queue, imp)
				}
			}
		}
		end = n
	}
	var path []string
	for n := end; n != ""; n = prev[n] {
		path = append(path, short(n))
	}
	slices.Reverse(path)
	if !direct {
		path = append(path, "…")
	}
	return append(path, short(dep))
}

// chainCost orders chains: known links before packages outside the module, then
// shorter first.
func chainCost(c []string) int {
	if slices.Contains(c, "…") {
		return len(c) + 1000
	}
	return len(c)
}

func short(importPath string) string {
	if s, ok := strings.CutPrefix(importPath, modulePath+"/"); ok {
		return s
	}
	return importPath
}

// TestLayoutKeepsTheArchitecture checks the packages of the module against the
// Packages table of docs/ARCHITECTURE.md.
func TestLayoutKeepsTheArchitecture(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("no go command on PATH to list the packages: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatalf("the module root is not two levels up: %v", err)
	}
	if first, _, _ := strings.Cut(string(mod), "\n"); strings.TrimSpace(first) != "module "+modulePath {
		t.Fatalf("go.mod at %s starts with %q, want module %s", root, first, modulePath)
	}
	page, err := os.ReadFile(filepath.Join(root, docFile))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := parseTable(string(page))
	if err != nil {
		t.Fatalf("%s: the Packages table: %v", docFile, err)
	}
	pkgs := goList(t, root)
	for _, p := range pkgs {
		if p.Error != nil {
			t.Errorf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		for _, e := range p.DepsErrors {
			t.Errorf("go list: %s: %s", p.ImportPath, e.Err)
		}
	}
	for _, problem := range checkLayout(docFile, rules, pkgs) {
		t.Error(problem)
	}
}

// sample is a Packages table in the format of docs/ARCHITECTURE.md.
const sample = "# title\n\n" +
	"## Packages (top level of the module)\n\n" +
	"Each row lists what its packages must not import.\n\n" +
	"| package | owns | must not import |\n" +
	"|---|---|---|\n" +
	"| `model` | the `Model`, energies; prose with `backticks`, commas | `trws`, `srmp`, `github.com/nats-io/...` |\n" +
	"| `model/uai`, `model/opengm`,`internal/hdf5` | file formats | `trws`, `persistency` |\n" +
	"|  `cmd/partopt`  |  the CLI  |  —  |\n" +
	"\n" +
	"| another | table |\n" +
	"|---|---|\n" +
	"| `x` | y |\n" +
	"\n## Data flow\n"

func TestParseTable(t *testing.T) {
	rules, err := parseTable(sample)
	if err != nil {
		t.Fatal(err)
	}
	want := []rule{
		{line: 9, packages: []string{"model"}, forbidden: []string{"trws", "srmp", "github.com/nats-io/..."}},
		{line: 10, packages: []string{"model/uai", "model/opengm", "internal/hdf5"}, forbidden: []string{"trws", "persistency"}},
		{line: 11, packages: []string{"cmd/partopt"}},
	}
	if !reflect.DeepEqual(rules, want) {
		t.Errorf("parseTable(sample) = %+v, want %+v", rules, want)
	}
	crlf, err := parseTable(strings.ReplaceAll(sample, "\n", "\r\n"))
	if err != nil || !reflect.DeepEqual(crlf, want) {
		t.Errorf("parseTable(sample with CRLF) = %+v, %v; want %+v", crlf, err, want)
	}

	const head = "## Packages\n\n| package | owns | must not import |\n|---|---|---|\n"
	for _, c := range []struct{ name, markdown, err string }{
		{"two cells", head + "| `model` | `trws` |\n", "line 5: 2 cells"},
		{"four cells", head + "| `model` | a | b | `trws` |\n", "line 5: 4 cells"},
		{"bare package", head + "| model | prose | `trws` |\n", "line 5: package column"},
		{"empty package", head + "|  | prose | `trws` |\n", "line 5: package column: empty"},
		{"package pattern", head + "| `model/...` | prose | `trws` |\n", "name each package"},
		{"empty forbidden", head + "| `model` | prose |  |\n", "line 5: must-not-import column"},
		{"bare forbidden", head + "| `model` | prose | trws |\n", "line 5: must-not-import column"},
		{"two paths in backticks", head + "| `model` | prose | `trws srmp` |\n", "not one backticked path"},
		{"missing comma", head + "| `model` | prose | `trws` `srmp` |\n", "not one backticked path"},
		{"dots inside", head + "| `model` | prose | `github.com/.../x` |\n", "not an import path"},
		{"dots alone", head + "| `model` | prose | `...` |\n", "not an import path"},
		{"trailing slash", head + "| `model` | prose | `trws/` |\n", "not an import path"},
		{"malformed row after good", head + "| `model` | prose | — |\n| `trws` | prose |\n", "line 6: 2 cells"},
		{"no heading", "# Packages\n\n| package | owns | must not import |\n|---|---|---|\n| `a` | b | — |\n", "no heading"},
		{"no table", "## Packages\n\nprose only\n", "no table"},
		{"table under a later heading", "## Packages\n\n## Other\n\n| package | owns | must not import |\n", "line 3: a heading before any table"},
		{"old header", "## Packages\n\n| package | owns | may import |\n|---|---|---|\n", "the header"},
		{"no separator", "## Packages\n\n| package | owns | must not import |\n| `a` | b | — |\n", "line 4: no |---|---|---|"},
		{"no rows", head + "\nprose\n", "no rows"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rules, err := parseTable(c.markdown)
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("parseTable = %+v, %v; want an error containing %q", rules, err, c.err)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, importPath string
		want                bool
	}{
		{"trws", modulePath + "/trws", true},
		{"trws", modulePath + "/trws/sub", false},
		{"trws", modulePath + "/trwsx", false},
		{"trws", "trws", false},
		{"model", modulePath + "/model/uai", false},
		{"model/...", modulePath + "/model", true},
		{"model/...", modulePath + "/model/uai", true},
		{"model/...", modulePath + "/model/uai/deep", true},
		{"model/...", modulePath + "/modelx", false},
		{"cmd/...", modulePath + "/cmd/partopt", true},
		{"github.com/nats-io/...", "github.com/nats-io/nats.go/jetstream", true},
		{"github.com/nats-io/...", "github.com/nats-io/nats-server/v2/server", true},
		{"github.com/nats-io/...", "github.com/nats-iox/nats.go", false},
		{"github.com/hashicorp/raft", "github.com/hashicorp/raft", true},
		{"github.com/hashicorp/raft", "github.com/hashicorp/raft-wal", false},
		{"github.com/hashicorp/raft/...", "github.com/hashicorp/raft-wal", false},
		{"github.com/vmihailenco/msgpack/...", "github.com/vmihailenco/msgpack/v5", true},
		{modulePath + "/trws", modulePath + "/trws", true},
	} {
		if got := matches(c.pattern, c.importPath); got != c.want {
			t.Errorf("matches(%q, %q) = %v, want %v", c.pattern, c.importPath, got, c.want)
		}
	}
}

func TestCheckLayout(t *testing.T) {
	m := func(rel string) string { return modulePath + "/" + rel }
	pkgs := []pkg{
		{ImportPath: m("cmd/partopt"), Imports: []string{m("model/uai"), m("trws")}, Deps: []string{m("model"), m("model/uai"), m("trws")}},
		{ImportPath: m("internal/testutil"), Imports: []string{"os"}, Deps: []string{"os"}},
		{ImportPath: m("model"), Imports: []string{"math"}, Deps: []string{"math"}},
		{ImportPath: m("model/grid"), Imports: []string{m("model/uai")},
			Deps: []string{m("cmd/partopt"), m("model"), m("model/uai"), m("trws"), "github.com/nats-io/nats.go", "github.com/nats-io/nkeys", "math"}},
		{ImportPath: m("model/uai"), Imports: []string{m("model"), m("trws")},
			Deps: []string{m("cmd/partopt"), m("model"), m("trws"), "github.com/nats-io/nats.go", "github.com/nats-io/nkeys", "math"}},
		{ImportPath: m("trws"), Imports: []string{m("cmd/partopt"), "github.com/nats-io/nats.go"},
			Deps: []string{m("cmd/partopt"), "github.com/nats-io/nats.go", "github.com/nats-io/nkeys", "math"}},
	}
	rules, err := parseTable("## Packages\n\n| package | owns | must not import |\n|---|---|---|\n" +
		"| `model` | x | `trws`, `github.com/nats-io/...` |\n" + // line 5: kept
		"| `model/uai`, `model/opengm` | x | `trws` |\n" + // line 6: broken, and model/opengm is gone
		"| `model/grid` | x | `model/...`, `github.com/nats-io/...`, `srmp` |\n" + // line 7: broken twice, srmp is gone
		"| `trws` | x | `github.com/nats-io/...` |\n" + // line 8: broken, two packages under the pattern
		"| `cmd/partopt` | x | — |\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ARCH:6: `model/uai` must not import `trws`, but depends on " + m("trws") + ": model/uai → trws",
		"ARCH:6: `model/opengm` is not a package of the module (go list ./...)",
		"ARCH:7: the row forbids `srmp`, which matches no package of the module (go list ./...)",
		"ARCH:7: `model/grid` must not import `model/...`, but depends on " + m("model/uai") + ": model/grid → model/uai (and 1 more it matches)",
		"ARCH:7: `model/grid` must not import `github.com/nats-io/...`, but depends on github.com/nats-io/nats.go: model/grid → model/uai → trws → github.com/nats-io/nats.go (and 1 more it matches)",
		"ARCH:8: `trws` must not import `github.com/nats-io/...`, but depends on github.com/nats-io/nats.go: trws → github.com/nats-io/nats.go (and 1 more it matches)",
		m("model/grid") + " depends on " + m("cmd/partopt") + ": nothing imports a command under cmd/ (model/grid → model/uai → trws → cmd/partopt)",
		m("model/uai") + " depends on " + m("cmd/partopt") + ": nothing imports a command under cmd/ (model/uai → trws → cmd/partopt)",
		m("trws") + " depends on " + m("cmd/partopt") + ": nothing imports a command under cmd/ (trws → cmd/partopt)",
	}
	got := checkLayout("ARCH", rules, pkgs)
	if !slices.Equal(got, want) {
		t.Errorf("checkLayout =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A package no row names fails, unless it is exempt (cmd/..., internal/testutil).
	got = checkLayout("ARCH", rules[:1], []pkg{
		{ImportPath: m("cmd/partopt")},
		{ImportPath: m("internal/testutil")},
		{ImportPath: m("model")},
		{ImportPath: m("trws")},
	})
	want = []string{"ARCH: no row of the Packages table names " + m("trws") + ": add a row with what it must not import (or —)"}
	if !slices.Equal(got, want) {
		t.Errorf("checkLayout with trws missing from the table =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestChainThroughOutsidePackages checks chain on a dependency that only packages
// outside the module import.
func TestChainThroughOutsidePackages(t *testing.T) {
	m := func(rel string) string { return modulePath + "/" + rel }
	index := map[string]*pkg{
		m("a"): {ImportPath: m("a"), Imports: []string{m("b")}, Deps: []string{m("b"), "x.org/y", "x.org/z"}},
		m("b"): {ImportPath: m("b"), Imports: []string{"x.org/y"}, Deps: []string{"x.org/y", "x.org/z"}},
	}
	if got, want := chain(index, m("a"), "x.org/z"), []string{"a", "b", "…", "x.org/z"}; !slices.Equal(got, want) {
		t.Errorf("chain = %q, want %q", got, want)
	}
}
