package gen

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
)

// rows is a whole Source as flat slices: unaries (pixel·Labels + label) and, in Mode
// PerEdge, weights (pixel·2 + direction: right, down).
type rows struct {
	h              grid.Header
	unary, weights []float32
}

func allRows(src Source) rows {
	h := src.Header()
	r := rows{h: h, unary: make([]float32, h.Width*h.Height*h.Labels)}
	if h.Mode == grid.PerEdge {
		r.weights = make([]float32, h.Width*h.Height*2)
	}
	u, w := rowBuffers(h)
	for y := range h.Height {
		src.Row(y, u, w)
		copy(r.unary[y*h.Width*h.Labels:], u)
		if w != nil {
			copy(r.weights[y*h.Width*2:], w)
		}
	}
	return r
}

func (r rows) unaries(x, y int) []float32 {
	p := y*r.h.Width + x
	return r.unary[p*r.h.Labels : (p+1)*r.h.Labels]
}

// weight is the weight of the edge from (x, y) in direction d (0 right, 1 down).
func (r rows) weight(x, y, d int) float32 {
	if r.h.Mode != grid.PerEdge {
		return float32(r.h.W)
	}
	return r.weights[2*(y*r.h.Width+x)+d]
}

// TestStereoTiledAtThePairsSizeIsStereo: tiled to the pair's own size, the model is
// Stereo's, every unary and weight bit for bit.
func TestStereoTiledAtThePairsSizeIsStereo(t *testing.T) {
	l, r := load(t, "testdata/left.png"), load(t, "testdata/right.png")
	for _, opts := range []StereoOptions{{}, {Contrast: true}, {Tau: 7, W: 2.5, T: 3, Contrast: true}} {
		st, err := Stereo(l, r, 5, opts)
		if err != nil {
			t.Fatal(err)
		}
		tm, err := StereoTiled(l, r, 20, 12, 5, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(st.Header(), tm.Header()) {
			t.Fatalf("%+v: header %+v, Stereo's %+v", opts, tm.Header(), st.Header())
		}
		want, got := allRows(st), allRows(tm)
		for i := range want.unary {
			if got.unary[i] != want.unary[i] {
				t.Fatalf("%+v: unary %d of pixel %d is %v, Stereo's %v", opts, i%5, i/5, got.unary[i], want.unary[i])
			}
		}
		for i := range want.weights {
			if got.weights[i] != want.weights[i] {
				t.Fatalf("%+v: weight %d of pixel %d is %v, Stereo's %v", opts, i%2, i/2, got.weights[i], want.weights[i])
			}
		}
	}
}

// TestStereoTiledMirrorsTheModel: output pixel (x, y) has the unaries of source pixel
// (mirror(x), mirror(y)); an edge has the weight of the source edge between the
// mirrored pixels, or w at a seam, where both map to one source pixel; edges leaving
// the output have weight 0.
func TestStereoTiledMirrorsTheModel(t *testing.T) {
	l, r := load(t, "testdata/left.png"), load(t, "testdata/right.png")
	const sw, sh, D = 20, 12, 6
	for _, tc := range []struct {
		w, h int
		opts StereoOptions
	}{
		{3*sw + 7, 2*sh + 5, StereoOptions{W: 3, Contrast: true}},
		{4 * sw, 3 * sh, StereoOptions{W: 3, Contrast: true}},
		{3*sw + 7, 2*sh + 5, StereoOptions{W: 3}},
		{7, 3*sh + 1, StereoOptions{Contrast: true}},
		{5*sw + 1, 1, StereoOptions{Contrast: true}},
		{1, 1, StereoOptions{Contrast: true}},
	} {
		t.Run(fmt.Sprintf("%dx%d/contrast=%v", tc.w, tc.h, tc.opts.Contrast), func(t *testing.T) {
			st, err := Stereo(l, r, D, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			tm, err := StereoTiled(l, r, tc.w, tc.h, D, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			h := tm.Header()
			if h.Width != tc.w || h.Height != tc.h || h.Labels != D || h.Kind != model.TruncatedLinear || h.T != st.Header().T || h.Mode != st.Header().Mode || h.W != st.Header().W {
				t.Fatalf("header %+v", h)
			}
			src, out := allRows(st), allRows(tm)
			seamWeight := float32(st.o.W) // w·exp(0)
			seams := 0
			for y := range tc.h {
				for x := range tc.w {
					u, v := mirror(x, sw), mirror(y, sh)
					if !slices.Equal(out.unaries(x, y), src.unaries(u, v)) {
						t.Fatalf("(%d,%d): unaries %v, source (%d,%d) has %v", x, y, out.unaries(x, y), u, v, src.unaries(u, v))
					}
					for d, q := range [2][2]int{{x + 1, y}, {x, y + 1}} {
						var want float32
						switch qu, qv := mirror(q[0], sw), mirror(q[1], sh); {
						case q[0] == tc.w || q[1] == tc.h:
							if h.Mode != grid.PerEdge {
								continue // no edge, nothing stored
							}
							want = 0
						case qu == u && qv == v:
							want = seamWeight
							seams++
						default: // the source edge between (u,v) and (qu,qv), stored at its first pixel
							want = src.weight(min(u, qu), min(v, qv), d)
						}
						if got := out.weight(x, y, d); got != want {
							t.Errorf("(%d,%d) edge %d: weight %v, want %v", x, y, d, got, want)
						}
					}
				}
			}
			// Seams: a vertical mirror line between columns k·sw−1 and k·sw in every row,
			// a horizontal one between rows k·sh−1 and k·sh in every column.
			if want := (tc.w-1)/sw*tc.h + (tc.h-1)/sh*tc.w; seams != want {
				t.Errorf("%d seam edges, want %d", seams, want)
			}
		})
	}
}

// TestStereoTiledTruthBeatsConstantDisparities: the pair's true disparities (1, and 3
// on the square), mirror-tiled, have a lower energy than any constant disparity, in
// flipped tiles as in the others: the tiles' data costs keep the source's sign of d.
func TestStereoTiledTruthBeatsConstantDisparities(t *testing.T) {
	l, r := load(t, "testdata/left.png"), load(t, "testdata/right.png")
	const W, H, D = 20*3 + 4, 12*3 + 2, 5
	tm, err := StereoTiled(l, r, W, H, D, StereoOptions{Contrast: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(tm)
	if err != nil {
		t.Fatal(err)
	}
	truth := make([]int, W*H)
	for y := range H {
		for x := range W {
			u, v := mirror(x, 20), mirror(y, 12)
			truth[y*W+x] = 1
			if u >= 8 && u < 14 && v >= 3 && v < 9 {
				truth[y*W+x] = 3
			}
		}
	}
	et := m.Energy(truth)
	for d := range D {
		flat := make([]int, W*H)
		for i := range flat {
			flat[i] = d
		}
		if e := m.Energy(flat); e <= et {
			t.Errorf("constant disparity %d has energy %v ≤ tiled truth %v", d, e, et)
		}
	}
}

// TestStereoTiledGridReadsBack: a .grid streamed from a model several source tiles
// wide and high reads back with every unary and edge weight of the Source's rows, and
// its energies agree with the UAI file and Build.
func TestStereoTiledGridReadsBack(t *testing.T) {
	l, r := load(t, "testdata/left.png"), load(t, "testdata/right.png")
	const W, H, D = 20*3 + 3, 12*2 + 5, 4
	for _, opts := range []StereoOptions{{}, {Contrast: true, T: math.Inf(1)}} {
		tm, err := StereoTiled(l, r, W, H, D, opts)
		if err != nil {
			t.Fatal(err)
		}
		g, u := writeBoth(t, tm) // grid with 8×8 tiles, UAI
		want := allRows(tm)
		h := want.h
		if g.NumVars() != W*H || g.NumFactors() != W*H+(W-1)*H+W*(H-1) {
			t.Fatalf("grid: %d variables, %d factors", g.NumVars(), g.NumFactors())
		}
		for f := range g.NumFactors() {
			vars, fn := g.FactorVars(f), g.FactorFunction(f)
			p := int(vars[0])
			x, y := p%W, p/W
			if len(vars) == 1 {
				for l, c := range want.unaries(x, y) {
					if fn.Table[l] != float64(c) {
						t.Fatalf("(%d,%d): unary %d read back %v, Source %v", x, y, l, fn.Table[l], c)
					}
				}
				continue
			}
			d := 0
			if int(vars[1]) == p+W {
				d = 1
			}
			if fn.Kind != model.TruncatedLinear || fn.T != h.T || fn.W != float64(want.weight(x, y, d)) {
				t.Fatalf("(%d,%d) edge %d read back %v w=%v T=%v, Source w=%v T=%v", x, y, d, fn.Kind, fn.W, fn.T, want.weight(x, y, d), h.T)
			}
		}
		sameEnergies(t, tm, g, u)
	}
}

func TestStereoTiledBadInput(t *testing.T) {
	l, r := load(t, "testdata/left.png"), load(t, "testdata/right.png")
	blocks := load(t, "testdata/blocks.png")
	for _, tc := range []struct {
		name    string
		w, h, d int
		right   bool // false: blocks.png (24×16) as the right image
		want    string
	}{
		{"pair of different sizes", 100, 100, 4, false, "same size"},
		{"one disparity", 100, 100, 1, true, "want at least 2"},
		{"no disparities", 100, 100, 0, true, "want at least 2"},
		{"more disparities than the width", 100, 100, 21, true, "disparities"},
		{"zero width", 0, 100, 4, true, "0×100"},
		{"negative height", 100, -1, 4, true, "100×-1"},
		{"wider than a grid", grid.MaxSide + 1, 10, 4, true, "per side"},
	} {
		rr := blocks
		if tc.right {
			rr = r
		}
		if _, err := StereoTiled(l, rr, tc.w, tc.h, tc.d, StereoOptions{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	tm, err := StereoTiled(l, r, 50, 30, 4, StereoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(t.TempDir(), "m.png"), tm, WriteOptions{}); !errors.Is(err, ErrOutputFormat) {
		t.Errorf("writing .png: %v, want ErrOutputFormat", err)
	}
}

// TestStereoTiledTsukubaStreamsInBoundedMemory streams Tsukuba (266×200) tiled to
// 2128×1000 pixels (8×5 tiles) with 16 disparities, 150 MB of grid file, and samples
// the live heap while it runs.
func TestStereoTiledTsukubaStreamsInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	l := loadShared(t, "middlebury-tsukuba/tsukuba1.bmp")
	r := loadShared(t, "middlebury-tsukuba/tsukuba2.bmp")
	const W, H, D = 266 * 8, 200 * 5, 16
	tm, err := StereoTiled(l, r, W, H, D, StereoOptions{Contrast: true})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "tsukuba.grid")
	start := time.Now()
	heap, err := peakHeapMB(func() error { return WriteFile(p, tm, WriteOptions{TileSize: 128}) })
	el := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stereo tiled %d×%d D=%d: %.0f MB in %v: %.1f Mpixel/s; peak live heap %.1f MB",
		W, H, D, float64(fi.Size())/1e6, el, W*H/el.Seconds()/1e6, heap)
	// One band of 128 rows is 128·W·(D+2)·4 bytes ≈ 20 MB.
	if heap >= 100 {
		t.Errorf("peak live heap %.1f MB, want < 100 MB", heap)
	}
	// A window across a vertical and a horizontal seam reads back as the Source's rows.
	g, err := grid.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	win, err := g.ReadWindow(266*3-2, 200*2-2, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(&window{tm, 266*3 - 2, 200*2 - 2, 4, 4})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		x := make([]int, 16)
		for j := range x {
			x[j] = (i*j + i) % D
		}
		if a, b := win.Model.Energy(x), m.Energy(x); !closeRel(a, b, 1e-6) {
			t.Errorf("labeling %d: window energy %v, generator %v", i, a, b)
		}
	}
}

// window is the w×h rectangle at (x0, y0) of a PerEdge Source, as a Source.
type window struct {
	src          Source
	x0, y0, w, h int
}

func (s *window) Header() grid.Header {
	h := s.src.Header()
	h.Width, h.Height = s.w, s.h
	return h
}

func (s *window) Row(y int, unary, weights []float32) {
	u, w := rowBuffers(s.src.Header())
	s.src.Row(s.y0+y, u, w)
	k := s.src.Header().Labels
	copy(unary, u[s.x0*k:(s.x0+s.w)*k])
	copy(weights, w[2*s.x0:2*(s.x0+s.w)])
	weights[2*(s.w-1)] = 0
	if y+1 == s.h {
		for x := range s.w {
			weights[2*x+1] = 0
		}
	}
}

// peakHeapMB runs f while sampling the live heap, and returns its peak in MiB.
func peakHeapMB(f func() error) (float64, error) {
	runtime.GC()
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	err := f()
	close(stop)
	<-done
	return float64(peak.Load()) / (1 << 20), err
}
