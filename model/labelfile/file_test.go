package labelfile_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/partopt/partopt/model/labelfile"
)

// raster is a test's in-memory copy of a label raster.
type raster struct {
	h labelfile.Header
	v []int32
}

func newRaster(h labelfile.Header) *raster {
	return &raster{h: h, v: make([]int32, h.Width*h.Height)}
}

func (r *raster) rect(x0, y0, w, h int) []int32 {
	out := make([]int32, 0, w*h)
	for y := y0; y < y0+h; y++ {
		out = append(out, r.v[y*r.h.Width+x0:][:w]...)
	}
	return out
}

func (r *raster) set(x0, y0, w, h int, src []int32) {
	for j := range h {
		copy(r.v[(y0+j)*r.h.Width+x0:][:w], src[j*w:(j+1)*w])
	}
}

// randomValues draws n values in [0, max].
func randomValues(rng *rand.Rand, n, max int) []int32 {
	v := make([]int32, n)
	for i := range v {
		v[i] = int32(rng.IntN(max + 1))
	}
	return v
}

// randomRect draws a rectangle of the W×H raster of tw×th tiles: sometimes the
// whole width or height, sometimes aligned to tiles, sometimes empty, mostly random.
func randomRect(rng *rand.Rand, W, H, tw, th int) (x0, y0, w, h int) {
	side := func(n, t int) (int, int) {
		switch rng.IntN(6) {
		case 0:
			return 0, n
		case 1: // whole tiles
			a := rng.IntN((n+t-1)/t) * t
			return a, min(n, a+(1+rng.IntN(3))*t) - a
		case 2:
			a := rng.IntN(n + 1)
			return a, 0
		}
		a := rng.IntN(n)
		return a, 1 + rng.IntN(n-a)
	}
	x0, w = side(W, tw)
	y0, h = side(H, th)
	return
}

func create(t testing.TB, h labelfile.Header) (*labelfile.File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.lab")
	f, err := labelfile.Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	return f, path
}

func open(t testing.TB, path string) *labelfile.File {
	t.Helper()
	f, err := labelfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func readAll(t testing.TB, f labelfile.Raster) []int32 {
	t.Helper()
	h := f.Header()
	dst := make([]int32, h.Width*h.Height)
	if err := f.ReadRect(0, 0, h.Width, h.Height, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

var roundTripHeaders = []struct {
	name string
	h    labelfile.Header
}{
	{"K=2 labeling, dividing tiles", labelfile.Header{Width: 64, Height: 48, Labels: 2, TileWidth: 16, TileHeight: 16}},
	{"K=2 persistent, non-dividing tiles", labelfile.Header{Width: 37, Height: 23, Labels: 2, Kind: labelfile.Persistent, TileWidth: 8, TileHeight: 5}},
	{"K=300 labeling, 2 bytes", labelfile.Header{Width: 50, Height: 41, Labels: 300, TileWidth: 7, TileHeight: 13}},
	{"K=256 labeling, 1 byte at its limit", labelfile.Header{Width: 20, Height: 19, Labels: 256, TileWidth: 6, TileHeight: 6}},
	{"K=256 persistent, 2 bytes", labelfile.Header{Width: 20, Height: 19, Labels: 256, Kind: labelfile.Persistent, TileWidth: 6, TileHeight: 6}},
	{"K=65536 labeling, 2 bytes", labelfile.Header{Width: 33, Height: 17, Labels: 65536, TileWidth: 10, TileHeight: 4}},
	{"K=65536 persistent, 4 bytes", labelfile.Header{Width: 33, Height: 17, Labels: 65536, Kind: labelfile.Persistent, TileWidth: 10, TileHeight: 4}},
	{"K=1", labelfile.Header{Width: 5, Height: 3, Labels: 1, TileWidth: 2, TileHeight: 2}},
	{"tiles larger than the raster", labelfile.Header{Width: 9, Height: 4, Labels: 3, TileWidth: 128, TileHeight: 128}},
	{"default tiles", labelfile.Header{Width: 300, Height: 140, Labels: 5, Kind: labelfile.Persistent}},
	{"1×1 tiles", labelfile.Header{Width: 6, Height: 5, Labels: 4, TileWidth: 1, TileHeight: 1}},
	{"one row", labelfile.Header{Width: 70, Height: 1, Labels: 9, TileWidth: 16, TileHeight: 16}},
	// 16×128 tiles of 4 bytes: a tile row of 300 tiles is read in runs of 128.
	{"tile rows split into 1 MiB runs", labelfile.Header{Width: 4800, Height: 130, Labels: 65536, Kind: labelfile.Persistent, TileWidth: 16, TileHeight: 128}},
}

// Random rectangles written to a new file read back as written, before Close from the
// writable file and after it from the opened one; the file has exactly the size the
// layout implies.
func TestRoundTrip(t *testing.T) {
	for i, tc := range roundTripHeaders {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			f, path := create(t, tc.h)
			h := f.Header()
			if h.TileWidth == 0 || h.TileHeight == 0 {
				t.Fatalf("header %+v: tile size not filled in", h)
			}
			want := newRaster(h)
			iters := 60
			if h.Width*h.Height > 100000 {
				iters = 8 // the race detector makes big rectangles slow
			}
			for range iters {
				x0, y0, w, hh := randomRect(rng, h.Width, h.Height, h.TileWidth, h.TileHeight)
				src := randomValues(rng, w*hh, h.MaxValue())
				if err := f.WriteRect(x0, y0, w, hh, src); err != nil {
					t.Fatal(err)
				}
				want.set(x0, y0, w, hh, src)
				x0, y0, w, hh = randomRect(rng, h.Width, h.Height, h.TileWidth, h.TileHeight)
				got := make([]int32, w*hh)
				if err := f.ReadRect(x0, y0, w, hh, got); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want.rect(x0, y0, w, hh)) {
					t.Fatalf("before Close: rectangle (%d,%d) %d×%d differs", x0, y0, w, hh)
				}
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			tiles := int64(h.TilesX() * h.TilesY())
			if size := labelfile.HeaderSize + int64(h.Width*h.Height*h.BytesPerValue()) + 4*tiles; st.Size() != size {
				t.Errorf("file size %d, want %d", st.Size(), size)
			}
			r := open(t, path)
			if r.Name() != path {
				t.Errorf("Name %q, want %q", r.Name(), path)
			}
			if r.Header() != h {
				t.Errorf("opened header %+v, want %+v", r.Header(), h)
			}
			if !slices.Equal(readAll(t, r), want.v) {
				t.Fatal("after Open: the raster differs")
			}
			for range iters / 2 {
				x0, y0, w, hh := randomRect(rng, h.Width, h.Height, h.TileWidth, h.TileHeight)
				got := make([]int32, w*hh)
				if err := r.ReadRect(x0, y0, w, hh, got); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want.rect(x0, y0, w, hh)) {
					t.Fatalf("after Open: rectangle (%d,%d) %d×%d differs", x0, y0, w, hh)
				}
			}
		})
	}
}

// A value takes the fewest bytes holding the kind's largest value (K−1 or K).
func TestBytesPerValue(t *testing.T) {
	for _, tc := range []struct {
		kind   labelfile.Kind
		labels int
		want   int
	}{
		{labelfile.Labeling, 1, 1},
		{labelfile.Labeling, 256, 1},
		{labelfile.Labeling, 257, 2},
		{labelfile.Labeling, 65536, 2},
		{labelfile.Persistent, 255, 1},
		{labelfile.Persistent, 256, 2},
		{labelfile.Persistent, 65535, 2},
		{labelfile.Persistent, 65536, 4},
	} {
		h := labelfile.Header{Width: 1, Height: 1, Labels: tc.labels, Kind: tc.kind}
		if got := h.BytesPerValue(); got != tc.want {
			t.Errorf("%v with %d labels: %d bytes per value, want %d", tc.kind, tc.labels, got, tc.want)
		}
	}
}

// Create refuses headers out of the format's limits before creating anything, and
// without allocating by the declared sizes.
func TestCreateRejectsBadHeaders(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    labelfile.Header
		want string
	}{
		{"zero width", labelfile.Header{Width: 0, Height: 5, Labels: 2}, "size"},
		{"negative height", labelfile.Header{Width: 5, Height: -5, Labels: 2}, "size"},
		{"width beyond 2³¹−1", labelfile.Header{Width: 1 << 31, Height: 5, Labels: 2}, "size"},
		{"no labels", labelfile.Header{Width: 5, Height: 5}, "labels"},
		{"70000 labels", labelfile.Header{Width: 5, Height: 5, Labels: 70000}, "labels"},
		{"65537 labels", labelfile.Header{Width: 5, Height: 5, Labels: 65537, Kind: labelfile.Persistent}, "labels"},
		{"unknown kind", labelfile.Header{Width: 5, Height: 5, Labels: 2, Kind: 3}, "kind"},
		{"alive plane 2 of 64 labels", labelfile.Header{Width: 5, Height: 5, Labels: 64, Kind: labelfile.Alive, Plane: 2}, "plane"},
		{"negative tile width", labelfile.Header{Width: 5, Height: 5, Labels: 2, TileWidth: -1}, "tile size"},
		{"huge tile height", labelfile.Header{Width: 5, Height: 5, Labels: 2, TileHeight: 1 << 40}, "tile size"},
		{"tile over MaxTileBytes", labelfile.Header{Width: 1 << 14, Height: 1 << 14, Labels: 65536, Kind: labelfile.Persistent, TileWidth: 1 << 14, TileHeight: 1 << 14}, "exceeds"},
		{"2³¹−1 squared pixels", labelfile.Header{Width: math.MaxInt32, Height: math.MaxInt32, Labels: 2}, "overflow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.lab")
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			f, err := labelfile.Create(path, tc.h)
			runtime.ReadMemStats(&after)
			if err == nil {
				f.Close()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), path) {
				t.Errorf("error %q, want the path and %q", err, tc.want)
			}
			if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
				t.Errorf("allocated %d bytes", d)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the file exists: %v", err)
			}
		})
	}
}

// Create reports a file it cannot create.
func TestCreateInMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "x.lab")
	if _, err := labelfile.Create(path, labelfile.Header{Width: 1, Height: 1, Labels: 2}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("error %v, want os.ErrNotExist", err)
	}
}

// Rectangles outside the raster, dst or src of the wrong length, a write to an opened
// file and calls after Close are errors; an empty rectangle inside is a no-op.
func TestBadArguments(t *testing.T) {
	h := labelfile.Header{Width: 10, Height: 8, Labels: 3, TileWidth: 4, TileHeight: 4}
	f, path := create(t, h)
	for _, tc := range []struct {
		name         string
		x0, y0, w, h int
		n            int
		want         string
	}{
		{"negative x0", -1, 0, 1, 1, 1, "outside"},
		{"negative y0", 0, -1, 1, 1, 1, "outside"},
		{"negative width", 0, 0, -1, 1, -1, "outside"},
		{"negative height", 0, 0, 1, -1, -1, "outside"},
		{"past the right edge", 9, 0, 2, 1, 2, "outside"},
		{"past the bottom edge", 0, 7, 1, 2, 2, "outside"},
		{"empty past the edge", 11, 0, 0, 1, 0, "outside"},
		{"width overflowing x0+w", 1, 0, math.MaxInt, 1, 0, "outside"},
		{"too few values", 0, 0, 2, 2, 3, "values"},
		{"too many values", 0, 0, 2, 2, 5, "values"},
	} {
		buf := make([]int32, max(tc.n, 0))
		if err := f.ReadRect(tc.x0, tc.y0, tc.w, tc.h, buf); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ReadRect error %v, want %q", tc.name, err, tc.want)
		}
		if err := f.WriteRect(tc.x0, tc.y0, tc.w, tc.h, buf); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: WriteRect error %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, r := range [][4]int{{10, 8, 0, 0}, {0, 3, 10, 0}, {4, 0, 0, 8}} {
		if err := f.ReadRect(r[0], r[1], r[2], r[3], nil); err != nil {
			t.Errorf("empty rectangle %v: %v", r, err)
		}
		if err := f.WriteRect(r[0], r[1], r[2], r[3], nil); err != nil {
			t.Errorf("empty rectangle %v: %v", r, err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("second Close: %v, want os.ErrClosed", err)
	}
	if err := f.WriteRect(0, 0, 1, 1, []int32{1}); err == nil {
		t.Error("WriteRect after Close: no error")
	}
	if err := f.ReadRect(0, 0, 1, 1, make([]int32, 1)); err == nil {
		t.Error("ReadRect after Close: no error")
	}
	r := open(t, path)
	if err := r.WriteRect(0, 0, 1, 1, []int32{1}); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("WriteRect on an opened file: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.ReadRect(0, 0, 1, 1, make([]int32, 1)); err == nil {
		t.Error("ReadRect after Close: no error")
	}
}

// WriteRect refuses a value outside [0, MaxValue] anywhere in src and writes nothing.
func TestWriteRectRejectsValuesOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		kind   labelfile.Kind
		labels int
		bad    int32
	}{
		{labelfile.Labeling, 3, 3},
		{labelfile.Labeling, 3, -1},
		{labelfile.Persistent, 3, 4},
		{labelfile.Labeling, 256, 256},
		{labelfile.Persistent, 65536, 65537},
		{labelfile.Persistent, 65536, math.MaxInt32},
		{labelfile.Persistent, 65536, math.MinInt32},
	} {
		t.Run(fmt.Sprintf("%v K=%d value %d", tc.kind, tc.labels, tc.bad), func(t *testing.T) {
			f, _ := create(t, labelfile.Header{Width: 6, Height: 5, Labels: tc.labels, Kind: tc.kind, TileWidth: 4, TileHeight: 4})
			defer f.Close()
			src := []int32{1, 1, 1, 1, 1, tc.bad}
			err := f.WriteRect(1, 1, 3, 2, src)
			if err == nil || !strings.Contains(err.Error(), "pixel (3,2)") {
				t.Fatalf("error %v, want one naming pixel (3,2)", err)
			}
			if got := readAll(t, f); slices.ContainsFunc(got, func(v int32) bool { return v != 0 }) {
				t.Error("a rejected WriteRect wrote values")
			}
		})
	}
}

// guillotine cuts [x0,x1)×[y0,y1) into disjoint rectangles: random bands of rows, each
// cut into random pieces, some of them aligned to whole tiles.
func guillotine(rng *rand.Rand, W, H, tw, th int) [][4]int {
	var out [][4]int
	for y := 0; y < H; {
		bh := min(H-y, 1+rng.IntN(2*th))
		if rng.IntN(3) == 0 && y%th == 0 {
			bh = min(H-y, th)
		}
		for x := 0; x < W; {
			bw := min(W-x, 1+rng.IntN(2*tw))
			if rng.IntN(3) == 0 && x%tw == 0 {
				bw = min(W-x, tw)
			}
			out = append(out, [4]int{x, y, bw, bh})
			x += bw
		}
		y += bh
	}
	return out
}

// Many goroutines writing disjoint rectangles that share tiles (whole tiles, partial
// tiles, across tile rows) leave every rectangle as written; concurrent readers of the
// finished file all read it intact. Run with -race.
func TestConcurrentDisjointWrites(t *testing.T) {
	for _, h := range []labelfile.Header{
		{Width: 257, Height: 199, Labels: 300, TileWidth: 16, TileHeight: 12},
		{Width: 100, Height: 90, Labels: 2, Kind: labelfile.Persistent, TileWidth: 7, TileHeight: 5},
	} {
		f, path := create(t, h)
		rng := rand.New(rand.NewPCG(3, uint64(h.Labels)))
		rects := guillotine(rng, h.Width, h.Height, h.TileWidth, h.TileHeight)
		want := newRaster(h)
		vals := make([][]int32, len(rects))
		for i, r := range rects {
			vals[i] = randomValues(rng, r[2]*r[3], h.MaxValue())
			want.set(r[0], r[1], r[2], r[3], vals[i])
		}
		const workers = 16
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for g := range workers {
			wg.Go(func() {
				for i := g; i < len(rects); i += workers {
					r := rects[i]
					if err := f.WriteRect(r[0], r[1], r[2], r[3], vals[i]); err != nil {
						errs <- err
						return
					}
					got := make([]int32, r[2]*r[3])
					if err := f.ReadRect(r[0], r[1], r[2], r[3], got); err != nil {
						errs <- err
						return
					}
					if !slices.Equal(got, vals[i]) {
						errs <- fmt.Errorf("rectangle %v reads back differently", r)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		r := open(t, path)
		for g := range workers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 9))
				for range 20 {
					x0, y0, w, hh := randomRect(rng, h.Width, h.Height, h.TileWidth, h.TileHeight)
					got := make([]int32, w*hh)
					if err := r.ReadRect(x0, y0, w, hh, got); err != nil {
						t.Error(err)
						return
					}
					if !slices.Equal(got, want.rect(x0, y0, w, hh)) {
						t.Errorf("rectangle (%d,%d) %d×%d differs", x0, y0, w, hh)
						return
					}
				}
			})
		}
		wg.Wait()
	}
}
