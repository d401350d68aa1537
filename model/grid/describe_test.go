package grid_test

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
)

// TestStatsEqualTheModelsStats: for every kind, weight mode and connectivity, and
// for degenerate sizes (one pixel, one row, one column, one label), the header's
// Stats equal model.Stats of the model read whole where the header determines them —
// variables, labels, factors by order and by kind, offset, the table's forbidden
// entries — and bound the rest, the distinct functions and the memory, reaching
// the upper bounds when the stored values are all distinct (random) and the lower
// when they are all equal (zeros).
func TestStatsEqualTheModelsStats(t *testing.T) {
	dir := t.TempDir()
	hs := headers(13, 10, 3)
	for _, wh := range [][3]int{{1, 1, 2}, {7, 1, 2}, {1, 6, 2}, {5, 4, 1}} {
		for _, conn := range []int{4, 8} {
			hs = append(hs, grid.Header{Width: wh[0], Height: wh[1], Labels: wh[2], Connectivity: conn,
				Kind: model.Potts, Mode: grid.PerEdge, TileWidth: 2, TileHeight: 3},
				grid.Header{Width: wh[0], Height: wh[1], Labels: wh[2], Connectivity: conn,
					Kind: model.TruncatedLinear, Mode: grid.Shared, W: 1, T: math.Inf(1), Offset: -2})
		}
	}
	for i, hd := range hs {
		for _, zeros := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s-%dx%dx%d-zeros=%v", name(hd), hd.Width, hd.Height, hd.Labels, zeros), func(t *testing.T) {
				g := genGrid(hd, uint64(i), 0)
				if zeros {
					clear(g.unary)
					clear(g.weights)
				}
				path := filepath.Join(dir, fmt.Sprint(i, zeros, ".grid"))
				g.write(t, path)
				s, err := grid.Describe(path)
				if err != nil {
					t.Fatal(err)
				}
				m, err := grid.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				ms := m.Stats()
				oneLabel := 0
				if hd.Labels == 1 {
					oneLabel = ms.Vars
				}
				orders := map[int]int{1: int(s.Unaries)}
				if s.Edges > 0 {
					orders[2] = int(s.Edges)
				}
				kinds := map[model.Kind]int{}
				for k, n := range s.FactorsByKind() {
					kinds[k] = int(n)
				}
				if s.Variables != int64(ms.Vars) || s.Factors() != int64(ms.Factors) || ms.MinLabels != hd.Labels ||
					ms.MaxLabels != hd.Labels || ms.OneLabel != oneLabel || s.Header.Offset != ms.Offset ||
					!maps.Equal(orders, ms.FactorsByOrder) || !maps.Equal(kinds, ms.FactorsByKind) ||
					s.TableForbidden != ms.ForbiddenEntries {
					t.Errorf("Stats %+v\nkinds %v orders %v\nmodel.Stats %+v", s, kinds, orders, ms)
				}
				// All values distinct (random) reach the upper bounds, all equal (zeros) the lower.
				fns, mem := s.MaxFunctions, s.MemoryBytes
				if zeros {
					fns, mem = s.MinFunctions, s.MinMemoryBytes
				}
				if int64(ms.Functions) != fns || ms.MemoryBytes != mem || s.MinMemoryBytes > s.MemoryBytes {
					t.Errorf("%d functions, %d bytes; Stats says %d..%d functions, %d..%d bytes",
						ms.Functions, ms.MemoryBytes, s.MinFunctions, s.MaxFunctions, s.MinMemoryBytes, s.MemoryBytes)
				}
				if st, _ := os.Stat(path); s.FileBytes != st.Size() {
					t.Errorf("FileBytes %d, the file has %d", s.FileBytes, st.Size())
				}
				if hs := s.Header; hs.Width != hd.Width || hs.Kind != hd.Kind || hs.Mode != hd.Mode || len(hs.Table) != len(hd.Table) {
					t.Errorf("Header %+v, want %+v", hs, hd)
				}
			})
		}
	}
}

// TestDescribeReadsNoTile: Describe reads the header and the table only, so a
// damaged tile or tile index goes unnoticed (Open and the tile reads report them),
// while a damaged header, table or length is reported as ErrCorrupt, and a
// missing file or a directory as such.
func TestDescribeReadsNoTile(t *testing.T) {
	dir := t.TempDir()
	hd := headers(13, 10, 3)[6] // explicit table, 4-connected
	path := filepath.Join(dir, "m.grid")
	genGrid(hd, 1, 0.1).write(t, path)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tableEnd := grid.HeaderSize + 4*hd.Labels*hd.Labels
	for _, c := range []struct {
		name    string
		damage  func([]byte) []byte
		corrupt bool
	}{
		{"tile", func(b []byte) []byte { b[tableEnd+5] ^= 1; return b }, false},
		{"index", func(b []byte) []byte { b[len(b)-3] ^= 1; return b }, false},
		{"header", func(b []byte) []byte { b[20] ^= 1; return b }, true},
		{"table", func(b []byte) []byte { b[grid.HeaderSize+1] ^= 1; return b }, true},
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }, true},
		{"trailing", func(b []byte) []byte { return append(b, 0) }, true},
	} {
		p := filepath.Join(dir, c.name+".grid")
		os.WriteFile(p, c.damage(append([]byte(nil), good...)), 0o644)
		_, err := grid.Describe(p)
		if c.corrupt != errors.Is(err, grid.ErrCorrupt) {
			t.Errorf("%s damaged: Describe: %v; want ErrCorrupt %v", c.name, err, c.corrupt)
		}
		if _, err := grid.Open(p); !c.corrupt && err == nil {
			if _, err = grid.ReadFile(p); err == nil {
				t.Errorf("%s damaged: read whole without an error", c.name)
			}
		}
	}
	if _, err := grid.Describe(filepath.Join(dir, "none.grid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := grid.Describe(dir); err == nil {
		t.Error("a directory described")
	}
}

// TestRetileKeepsEveryValue: Retile copies every kind, mode and connectivity to new
// tiles bit for bit: the copy's header is the source's but for its tiles, and its
// model is the source's.
func TestRetileKeepsEveryValue(t *testing.T) {
	dir := t.TempDir()
	for i, hd := range headers(13, 10, 3) {
		t.Run(name(hd), func(t *testing.T) {
			src, dst := filepath.Join(dir, fmt.Sprint(i, ".grid")), filepath.Join(dir, fmt.Sprint(i, "-retiled.grid"))
			g := genGrid(hd, uint64(i), 0.2)
			g.write(t, src)
			r, err := grid.Open(src)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if err := r.RetileFile(dst, 3, 7); err != nil {
				t.Fatal(err)
			}
			c, err := grid.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			want := r.Header()
			want.TileWidth, want.TileHeight = 3, 7
			if got := c.Header(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("header %+v, want %+v", got, want)
			}
			a, err := r.Model()
			if err != nil {
				t.Fatal(err)
			}
			b, err := c.Model()
			if err != nil {
				t.Fatal(err)
			}
			checkSameEnergies(t, "retiled", b, a, 0)
		})
	}
}
