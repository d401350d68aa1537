package grid_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/random"
)

// sameEnergy compares energies with a relative tolerance for different summation
// orders; +Inf equals only +Inf.
func sameEnergy(a, b, tol float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) || math.IsNaN(a) || math.IsNaN(b) {
		return a == b
	}
	return math.Abs(a-b) <= tol*max(1, math.Abs(a), math.Abs(b))
}

// gridData is a whole grid held in memory by a test.
type gridData struct {
	h       grid.Header
	unary   []float32
	weights []float32
}

func (g *gridData) nd() int {
	if g.h.Mode == grid.PerEdge {
		return g.h.Connectivity / 2
	}
	return 0
}

// genGrid draws unaries in [0,1) (+Inf with probability infProb, never all labels of a
// pixel) and per-edge weights in [0,2).
func genGrid(h grid.Header, seed uint64, infProb float64) *gridData {
	rng := random.New(seed)
	if h.Connectivity == 0 {
		h.Connectivity = 4
	}
	g := &gridData{h: h}
	g.unary = make([]float32, h.Width*h.Height*h.Labels)
	for i := range g.unary {
		g.unary[i] = rng.Float32()
		if i%h.Labels != 0 && rng.Float64() < infProb {
			g.unary[i] = float32(math.Inf(1))
		}
	}
	g.weights = make([]float32, h.Width*h.Height*g.nd())
	for i := range g.weights {
		g.weights[i] = 2 * rng.Float32()
	}
	return g
}

// write writes g to path in row bands of random sizes.
func (g *gridData) write(t testing.TB, path string) {
	t.Helper()
	w, err := grid.Create(path, g.h)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ru, rw := g.h.Width*g.h.Labels, g.h.Width*g.nd()
	for y := 0; y < g.h.Height; {
		n := min(1+rng.IntN(5), g.h.Height-y)
		if err := w.WriteRows(g.unary[y*ru:(y+n)*ru], g.weights[y*rw:(y+n)*rw]); err != nil {
			t.Fatal(err)
		}
		y += n
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// reference builds the whole model directly, independently of the Reader.
func (g *gridData) reference(t testing.TB) *model.Model {
	t.Helper()
	h := g.h
	labels := make([]int, h.Width*h.Height)
	for i := range labels {
		labels[i] = h.Labels
	}
	b := model.NewBuilder(labels)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.AddConstant(h.Offset))
	tab := make([]float64, h.Labels)
	for p := range labels {
		for l := range tab {
			tab[l] = float64(g.unary[p*h.Labels+l])
		}
		fn, err := b.AddFunction(model.Function{Kind: model.Explicit, Shape: []int{h.Labels}, Table: tab})
		must(err)
		must(b.AddFactor(fn, p))
	}
	for p := range labels {
		x, y := p%h.Width, p/h.Width
		for d, dir := range h.Dirs() {
			qx, qy := x+dir[0], y+dir[1]
			if qx < 0 || qx >= h.Width || qy >= h.Height {
				continue
			}
			wt := 0.0
			if g.nd() > 0 {
				wt = float64(g.weights[p*g.nd()+d])
			}
			fn, err := b.AddFunction(h.Function(wt))
			must(err)
			must(b.AddFactor(fn, p, qy*h.Width+qx))
		}
	}
	m, err := b.Build()
	must(err)
	return m
}

func randomLabeling(rng *rand.Rand, m *model.Model) []int {
	x := make([]int, m.NumVars())
	for v := range x {
		x[v] = rng.IntN(m.NumLabels(v))
	}
	return x
}

// checkSameEnergies compares a and b (same variables) on random labelings, some of
// them avoiding forbidden labels so that finite energies are compared too.
func checkSameEnergies(t *testing.T, what string, a, b *model.Model, tol float64) {
	t.Helper()
	if a.NumVars() != b.NumVars() {
		t.Fatalf("%s: %d variables, want %d", what, a.NumVars(), b.NumVars())
	}
	rng := random.New(7)
	finite := 0
	for i := range 40 {
		x := randomLabeling(rng, a)
		if i%2 == 0 {
			for v := range x {
				x[v] = 0 // label 0 is never forbidden by genGrid
			}
		}
		ea, eb := a.Energy(x), b.Energy(x)
		if !sameEnergy(ea, eb, tol) {
			t.Fatalf("%s: labeling %d: energy %v, want %v", what, i, ea, eb)
		}
		if !math.IsInf(ea, 0) {
			finite++
		}
	}
	if finite == 0 {
		t.Fatalf("%s: no finite energy compared", what)
	}
}

// headers lists every pairwise kind and weight mode in both connectivities.
func headers(w, h, k int) []grid.Header {
	var hs []grid.Header
	for _, conn := range []int{4, 8} {
		for _, kind := range []model.Kind{model.Potts, model.TruncatedLinear, model.TruncatedQuadratic} {
			for _, mode := range []grid.WeightMode{grid.Shared, grid.PerEdge} {
				hd := grid.Header{Width: w, Height: h, Labels: k, Connectivity: conn, Kind: kind, Mode: mode,
					TileWidth: 4, TileHeight: 3, Offset: 1.25}
				if kind != model.Potts {
					hd.T = 2
				}
				if mode == grid.Shared {
					hd.W = 0.75
				}
				hs = append(hs, hd)
			}
		}
		tab := make([]float32, k*k)
		for i := range tab {
			tab[i] = float32(i%5) * 0.5
		}
		tab[1] = float32(math.Inf(1))
		hs = append(hs, grid.Header{Width: w, Height: h, Labels: k, Connectivity: conn, Kind: model.Explicit,
			Mode: grid.Table, Table: tab, TileWidth: 5, TileHeight: 2})
	}
	return hs
}

func name(h grid.Header) string {
	return fmt.Sprintf("%v-%v-%d", h.Kind, h.Mode, h.Connectivity)
}

func TestRoundTripEveryKindAndMode(t *testing.T) {
	dir := t.TempDir()
	for i, hd := range headers(13, 10, 3) {
		t.Run(name(hd), func(t *testing.T) {
			g := genGrid(hd, uint64(i), 0.2)
			path := filepath.Join(dir, fmt.Sprint(i, ".grid"))
			g.write(t, path)
			r, err := grid.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got := r.Header()
			if got.Width != hd.Width || got.Height != hd.Height || got.Labels != hd.Labels || got.Kind != hd.Kind ||
				got.Mode != hd.Mode || got.W != hd.W || got.T != hd.T || got.Offset != hd.Offset ||
				got.Connectivity != hd.Connectivity || !slices.Equal(got.Table, hd.Table) {
				t.Fatalf("header %+v, want %+v", got, hd)
			}
			m, err := r.Model()
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			ref := g.reference(t)
			if m.NumFactors() != ref.NumFactors() {
				t.Fatalf("%d factors, want %d", m.NumFactors(), ref.NumFactors())
			}
			checkSameEnergies(t, "Model", m, ref, 1e-12)
			if hd.Mode != grid.PerEdge && m.NumFunctions() > hd.Width*hd.Height+1 {
				t.Errorf("%d functions: the shared pairwise function is not shared", m.NumFunctions())
			}
		})
	}
}

// TestWindowEqualsInduced checks that a window is model.Induced of its rectangle and
// that its crossing edges are exactly the induced sub-model's boundary factors.
func TestWindowEqualsInduced(t *testing.T) {
	dir := t.TempDir()
	for i, hd := range headers(11, 9, 3) {
		t.Run(name(hd), func(t *testing.T) {
			g := genGrid(hd, uint64(100+i), 0.1)
			path := filepath.Join(dir, fmt.Sprint(i, ".grid"))
			g.write(t, path)
			r, err := grid.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			ref := g.reference(t)
			rng := random.New(uint64(i))
			rects := [][4]int{{0, 0, 11, 9}, {0, 0, 1, 1}, {10, 8, 1, 1}, {3, 2, 5, 4}, {0, 4, 11, 2}, {7, 0, 4, 9}}
			for range 10 {
				w, h := 1+rng.IntN(11), 1+rng.IntN(9)
				rects = append(rects, [4]int{rng.IntN(11 - w + 1), rng.IntN(9 - h + 1), w, h})
			}
			for _, rc := range rects {
				x0, y0, w, h := rc[0], rc[1], rc[2], rc[3]
				win, err := r.ReadWindow(x0, y0, w, h)
				if err != nil {
					t.Fatal(err)
				}
				var nodes []int
				for y := y0; y < y0+h; y++ {
					for x := x0; x < x0+w; x++ {
						nodes = append(nodes, y*hd.Width+x)
					}
				}
				sub, err := ref.Induced(nodes)
				if err != nil {
					t.Fatal(err)
				}
				what := fmt.Sprintf("window %v", rc)
				checkSameEnergies(t, what, win.Model, sub.Model, 1e-12)
				if win.Model.NumFactors() != sub.Model.NumFactors() {
					t.Fatalf("%s: %d factors, want %d", what, win.Model.NumFactors(), sub.Model.NumFactors())
				}
				m2, err := r.Window(x0, y0, w, h)
				if err != nil {
					t.Fatal(err)
				}
				checkSameEnergies(t, what+" (Window)", m2, sub.Model, 1e-12)

				if len(win.Crossing) != len(sub.Boundary) {
					t.Fatalf("%s: %d crossing edges, want %d", what, len(win.Crossing), len(sub.Boundary))
				}
				want := map[[2]int]*model.Function{}
				for _, f := range sub.Boundary {
					vs := ref.FactorVars(f)
					want[[2]int{int(vs[0]), int(vs[1])}] = ref.FactorFunction(f)
				}
				for _, e := range win.Crossing {
					fn, ok := want[[2]int{e.U, e.V}]
					if !ok {
						t.Fatalf("%s: crossing edge %d-%d is not a boundary factor", what, e.U, e.V)
					}
					delete(want, [2]int{e.U, e.V})
					got := win.Model.Func(e.Func)
					for a := range hd.Labels {
						for b := range hd.Labels {
							if got.Pairwise(a, b) != fn.Pairwise(a, b) {
								t.Fatalf("%s: edge %d-%d: θ(%d,%d) = %v, want %v", what, e.U, e.V, a, b, got.Pairwise(a, b), fn.Pairwise(a, b))
							}
						}
					}
					if (win.Local(e.U, hd.Width) >= 0) == (win.Local(e.V, hd.Width) >= 0) {
						t.Fatalf("%s: edge %d-%d does not cross", what, e.U, e.V)
					}
				}
			}
		})
	}
}

// recorder is an io.ReaderAt that records the ranges read.
type recorder struct {
	r     io.ReaderAt
	mu    sync.Mutex
	reads [][2]int64
}

func (rc *recorder) ReadAt(p []byte, off int64) (int, error) {
	rc.mu.Lock()
	rc.reads = append(rc.reads, [2]int64{off, off + int64(len(p))})
	rc.mu.Unlock()
	return rc.r.ReadAt(p, off)
}

// tileOffset returns the byte range of tile (tx, ty), from the format's layout.
func tileRange(h grid.Header, tx, ty int) [2]int64 {
	pp := int64(h.Labels)
	if h.Mode == grid.PerEdge {
		pp += int64(h.Connectivity / 2)
	}
	off := int64(grid.HeaderSize + 4*len(h.Table))
	for y := range h.TilesY() {
		for x := range h.TilesX() {
			w := min((x+1)*h.TileWidth, h.Width) - x*h.TileWidth
			hh := min((y+1)*h.TileHeight, h.Height) - y*h.TileHeight
			n := int64(w*hh) * pp * 4
			if x == tx && y == ty {
				return [2]int64{off, off + n}
			}
			off += n
		}
	}
	panic("no such tile")
}

func TestWindowReadsOnlyIntersectingTiles(t *testing.T) {
	hd := grid.Header{Width: 40, Height: 30, Labels: 2, Connectivity: 4, Kind: model.Potts, Mode: grid.PerEdge, TileWidth: 8, TileHeight: 8}
	g := genGrid(hd, 1, 0)
	path := filepath.Join(t.TempDir(), "g.grid")
	g.write(t, path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// corrupt tile (4,3), the bottom-right one
	bad := tileRange(hd, 4, 3)
	data[bad[0]+5] ^= 0x40
	rec := &recorder{r: bytes.NewReader(data)}
	r, err := grid.NewReader(rec, int64(len(data)), "g.grid")
	if err != nil {
		t.Fatalf("the index is intact, Open must succeed: %v", err)
	}
	rec.reads = nil
	if _, err := r.Window(9, 9, 14, 6); err != nil { // tiles (1..2, 1)
		t.Fatalf("window away from the corrupt tile: %v", err)
	}
	for _, rd := range rec.reads {
		ok := false
		for _, tc := range [][2]int{{1, 1}, {2, 1}} {
			tr := tileRange(hd, tc[0], tc[1])
			ok = ok || (rd[0] >= tr[0] && rd[1] <= tr[1])
		}
		if !ok {
			t.Errorf("read [%d,%d) outside the tiles intersecting the window", rd[0], rd[1])
		}
	}
	if len(rec.reads) != 2 {
		t.Errorf("%d reads, want 2 (one per tile)", len(rec.reads))
	}
	// ReadWindow with per-edge weights also reads the tiles above and left.
	if _, err := r.ReadWindow(16, 8, 8, 8); err != nil {
		t.Fatal(err)
	}
	_, err = r.Window(30, 20, 5, 5)
	if err == nil || !strings.Contains(err.Error(), "tile (4,3)") || !strings.HasPrefix(err.Error(), "g.grid: ") ||
		!errors.Is(err, grid.ErrCorrupt) {
		t.Fatalf("window over the corrupt tile: error %v, want one naming g.grid and tile (4,3)", err)
	}
	if _, err := r.Model(); err == nil || !strings.Contains(err.Error(), "tile (4,3)") {
		t.Fatalf("Model: error %v, want tile (4,3)", err)
	}
}

func TestCorruptionIsDetected(t *testing.T) {
	for _, hd := range []grid.Header{
		{Width: 9, Height: 7, Labels: 2, Kind: model.TruncatedLinear, T: 1, Mode: grid.PerEdge, TileWidth: 4, TileHeight: 4},
		headers(9, 7, 2)[6], // explicit table
	} {
		g := genGrid(hd, 3, 0.1)
		path := filepath.Join(t.TempDir(), "c.grid")
		g.write(t, path)
		good, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		load := func(data []byte) error {
			r, err := grid.NewReader(bytes.NewReader(data), int64(len(data)), "c.grid")
			if err == nil {
				_, err = r.Model()
			}
			if err != nil && !strings.HasPrefix(err.Error(), "c.grid: ") {
				t.Fatalf("error %q does not name the file", err)
			}
			return err
		}
		if err := load(good); err != nil {
			t.Fatal(err)
		}
		// Every single bit flip anywhere is caught: the header, the table, the index and
		// the tiles are all covered by a CRC32C.
		for i := range good {
			for _, bit := range []byte{0x01, 0x80} {
				data := slices.Clone(good)
				data[i] ^= bit
				if err := load(data); err == nil {
					t.Fatalf("%v: flipping bit %#x of byte %d went unnoticed", hd.Mode, bit, i)
				} else if !errors.Is(err, grid.ErrCorrupt) {
					t.Fatalf("byte %d: error %v does not wrap ErrCorrupt", i, err)
				}
			}
		}
		for _, n := range []int{0, 7, 64, grid.HeaderSize, grid.HeaderSize + 1, len(good) / 2, len(good) - 1} {
			err := load(good[:n])
			if err == nil || !strings.Contains(err.Error(), "truncated") {
				t.Fatalf("truncated to %d bytes: error %v, want truncated", n, err)
			}
		}
		if err := load(append(slices.Clone(good), 0)); err == nil || !strings.Contains(err.Error(), "trailing") {
			t.Fatalf("trailing byte: error %v", err)
		}
	}
	want := map[string]func(b []byte){
		"bad magic": func(b []byte) { copy(b, "NOTAGRID") },
		"version":   func(b []byte) { b[8] = 2 },
	}
	g := genGrid(grid.Header{Width: 3, Height: 3, Labels: 2, Kind: model.Potts, W: 1}, 1, 0)
	path := filepath.Join(t.TempDir(), "m.grid")
	g.write(t, path)
	for msg, mutate := range want {
		data, _ := os.ReadFile(path)
		mutate(data)
		_, err := grid.NewReader(bytes.NewReader(data), int64(len(data)), "m.grid")
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %v", msg, err)
		}
	}
}

func TestTileErrorNamesTheTile(t *testing.T) {
	hd := grid.Header{Width: 20, Height: 20, Labels: 2, Kind: model.Potts, W: 1, TileWidth: 8, TileHeight: 8}
	g := genGrid(hd, 2, 0)
	path := filepath.Join(t.TempDir(), "t.grid")
	g.write(t, path)
	data, _ := os.ReadFile(path)
	tr := tileRange(hd, 1, 2)
	data[tr[0]] ^= 1
	os.WriteFile(path, data, 0o644)
	r, err := grid.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Window(10, 17, 2, 2)
	if err == nil || !strings.HasPrefix(err.Error(), path+": corrupt grid file: tile (1,2): checksum mismatch") {
		t.Fatalf("error %v", err)
	}
}

func TestUnfinishedFileIsRefused(t *testing.T) {
	hd := grid.Header{Width: 4, Height: 4, Labels: 2, Kind: model.Potts, W: 1}
	path := filepath.Join(t.TempDir(), "u.grid")
	w, err := grid.Create(path, hd)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRows(make([]float32, 2*4*2), nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "2 of 4 rows") {
		t.Fatalf("Close after 2 of 4 rows: %v", err)
	}
	if _, err := grid.Open(path); err == nil || !strings.Contains(err.Error(), "unfinished") {
		t.Fatalf("Open: %v", err)
	}
}

func TestWriterRejectsBadInput(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	ok := grid.Header{Width: 3, Height: 2, Labels: 2, Kind: model.TruncatedQuadratic, T: 4, Mode: grid.PerEdge}
	for _, c := range []struct {
		name    string
		unary   []float32
		weights []float32
		want    string
	}{
		{"NaN unary", []float32{0, 0, 0, nan, 0, 0}, make([]float32, 6), "pixel (1,0) label 1: unary NaN"},
		{"-Inf unary", []float32{0, 0, 0, 0, -inf, 0}, make([]float32, 6), "unary -Inf"},
		{"negative weight", make([]float32, 6), []float32{0, -1, 0, 0, 0, 0}, "weight -1"},
		{"NaN weight", make([]float32, 6), []float32{nan, 0, 0, 0, 0, 0}, "weight NaN"},
		{"Inf weight", make([]float32, 6), []float32{0, 0, inf, 0, 0, 0}, "weight +Inf"},
		{"partial row", make([]float32, 5), make([]float32, 6), "multiple of the row size"},
		{"weights missing", make([]float32, 6), nil, "0 weights for 1 rows, want 6"},
		{"too many rows", make([]float32, 18), make([]float32, 18), "beyond the height"},
	} {
		w, err := grid.NewWriter(&seeker{}, ok)
		if err != nil {
			t.Fatal(err)
		}
		err = w.WriteRows(c.unary, c.weights)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	// a weight of an edge that leaves the image is ignored
	w, _ := grid.NewWriter(&seeker{}, ok)
	if err := w.WriteRows(make([]float32, 12), []float32{0, 0, 0, 0, nan, 0, 0, 0, 0, 0, 0, nan}); err != nil {
		t.Errorf("weights of edges leaving the image: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Error(err)
	}
	tab := []float32{0, 1, 1, nan}
	for _, c := range []struct {
		h    grid.Header
		want string
	}{
		{grid.Header{Width: 0, Height: 2, Labels: 2}, "size 0×2"},
		{grid.Header{Width: 2, Height: 2, Labels: 0}, "0 labels"},
		{grid.Header{Width: 2, Height: 2, Labels: 1 << 20}, "labels out of range"},
		{grid.Header{Width: 2, Height: 2, Labels: 2, Connectivity: 6}, "connectivity 6"},
		{grid.Header{Width: 2, Height: 2, Labels: 2, Kind: model.Potts, Mode: grid.Table}, "weight mode table"},
		{grid.Header{Width: 2, Height: 2, Labels: 2, Kind: model.TruncatedLinear}, "truncation 0"},
		{grid.Header{Width: 2, Height: 2, Labels: 2, Kind: model.Potts, W: -1}, "shared weight -1"},
		{grid.Header{Width: 2, Height: 2, Labels: 2, Kind: model.Potts, W: math.NaN()}, "shared weight NaN"},
		{grid.Header{Width: 2, Height: 2, Labels: 2, Kind: model.Explicit, Mode: grid.Table, Table: tab}, "table entry 3: NaN"},
		{grid.Header{Width: 2, Height: 2, Labels: 2, Kind: model.Explicit, Mode: grid.Table, Table: tab[:3]}, "3 entries"},
		{grid.Header{Width: 2, Height: 2, Labels: 2, Kind: model.Kind(9)}, "unknown pairwise kind"},
		{grid.Header{Width: 2, Height: 2, Labels: 2, Kind: model.Potts, Offset: math.Inf(1)}, "offset"},
		{grid.Header{Width: 1 << 30, Height: 1 << 30, Labels: 1 << 16, Kind: model.Potts, TileWidth: 1 << 20, TileHeight: 1 << 20}, "exceeds"},
	} {
		_, err := grid.NewWriter(&seeker{}, c.h)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("header %+v: error %v, want %q", c.h, err, c.want)
		}
	}
}

// seeker is an io.WriteSeeker that keeps only the size written: enough for the
// Writer, which never reads back.
type seeker struct{ pos, size int64 }

func (s *seeker) Write(p []byte) (int, error) {
	s.pos += int64(len(p))
	s.size = max(s.size, s.pos)
	return len(p), nil
}

func (s *seeker) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		s.pos = off
	case io.SeekCurrent:
		s.pos += off
	case io.SeekEnd:
		s.pos = s.size + off
	}
	return s.pos, nil
}

// TestStreamingWriterBoundedMemory streams a 4096×4096 grid, K = 2, per-edge weights
// (256 MiB of data), and checks that the live heap stays small throughout.
func TestStreamingWriterBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("256 MiB stream")
	}
	const side, k = 4096, 2
	hd := grid.Header{Width: side, Height: side, Labels: k, Kind: model.Potts, Mode: grid.PerEdge, TileWidth: 128, TileHeight: 64}
	out := &seeker{}
	w, err := grid.NewWriter(out, hd)
	if err != nil {
		t.Fatal(err)
	}
	const band = 16
	unary := make([]float32, band*side*k)
	weights := make([]float32, band*side*2)
	for i := range unary {
		unary[i] = float32(i%7) * 0.25
	}
	for i := range weights {
		weights[i] = float32(i % 3)
	}
	var peak uint64
	var ms runtime.MemStats
	for y := 0; y < side; y += band {
		if err := w.WriteRows(unary, weights); err != nil {
			t.Fatal(err)
		}
		if y%(side/8) == 0 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if want := int64(grid.HeaderSize) + side*side*(k+2)*4 + int64(hd.TilesX()*hd.TilesY())*16; out.size != want {
		t.Fatalf("wrote %d bytes, want %d", out.size, want)
	}
	t.Logf("peak live heap %.1f MiB for a %d MiB stream", float64(peak)/(1<<20), out.size>>20)
	if peak > 64<<20 {
		t.Fatalf("live heap %d MiB while streaming, want < 64 MiB", peak>>20)
	}
}
