package gen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/uai"
)

var sharedImages = testutil.SharedPath("images")

func load(t testing.TB, path string) image.Image {
	t.Helper()
	img, err := LoadImage(path)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func loadShared(t testing.TB, rel string) image.Image {
	t.Helper()
	p := filepath.Join(sharedImages, rel)
	testutil.SkipWithoutShared(t, p)
	return load(t, p)
}

// closeRel reports |a−b| ≤ tol·max(1, |a|, |b|).
func closeRel(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*max(1, math.Abs(a), math.Abs(b))
}

func writeBoth(t *testing.T, src Source) (g, u *model.Model) {
	t.Helper()
	dir := t.TempDir()
	gp, up := filepath.Join(dir, "m.grid"), filepath.Join(dir, "m.uai")
	rows := 0 // the grid's progress: every row once, in order
	progress := func(done, height int) {
		if rows++; done != rows || height != src.Header().Height {
			t.Errorf("progress %d of %d after %d rows", done, height, rows)
		}
	}
	if err := WriteFile(gp, src, WriteOptions{TileSize: 8, Progress: progress}); err != nil {
		t.Fatal(err)
	}
	if rows != src.Header().Height {
		t.Errorf("progress reported %d rows of %d", rows, src.Header().Height)
	}
	if err := WriteFile(up, src, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	g, err := grid.ReadFile(gp)
	if err != nil {
		t.Fatal(err)
	}
	if u, err = uai.ReadFile(up); err != nil {
		t.Fatal(err)
	}
	return g, u
}

// sameEnergies checks that the models agree with each other and with Build(src) on
// the given labelings and on random ones.
func sameEnergies(t *testing.T, src Source, g, u *model.Model, labelings ...[]int) {
	t.Helper()
	m, err := Build(src)
	if err != nil {
		t.Fatal(err)
	}
	h := src.Header()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		x := make([]int, h.Width*h.Height)
		for i := range x {
			x[i] = rng.IntN(h.Labels)
		}
		labelings = append(labelings, x)
	}
	for i, x := range labelings {
		em, eg, eu := m.Energy(x), g.Energy(x), u.Energy(x)
		if math.IsInf(em, 0) || math.IsNaN(em) {
			t.Fatalf("labeling %d: energy %v, want finite", i, em)
		}
		if !closeRel(em, eg, 1e-4) || !closeRel(em, eu, 1e-4) {
			t.Errorf("labeling %d: energy built %v, grid %v, uai %v", i, em, eg, eu)
		}
	}
}

func TestSegmentationModel(t *testing.T) {
	seg, err := Segmentation(load(t, "testdata/blocks.png"), 3, SegOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := seg.Header()
	if h.Width != 24 || h.Height != 16 || h.Labels != 3 || h.Kind != model.Potts || h.Mode != grid.PerEdge || h.Connectivity != 4 {
		t.Fatalf("header %+v", h)
	}
	g, u := writeBoth(t, seg)
	if g.NumVars() != 24*16 || u.NumVars() != 24*16 {
		t.Fatalf("variables: grid %d, uai %d, want %d", g.NumVars(), u.NumVars(), 24*16)
	}
	// The k-means labeling separates the three blocks: red disc, blue, green.
	x := seg.Labeling()
	red, blue, green := x[8*24+8], x[2*24+2], x[8*24+20]
	if red == blue || red == green || blue == green {
		t.Errorf("k-means labels red %d, blue %d, green %d, want distinct", red, blue, green)
	}
	sameEnergies(t, seg, g, u, x)
	// Formula check on one pixel and one edge.
	cent := seg.Centres()
	s2, beta := seg.Scales()
	unary, weights := make([]float32, 24*3), make([]float32, 48)
	seg.Row(5, unary, weights)
	c := toRGB(load(t, "testdata/blocks.png")).c
	p, q := 3*(5*24+4), 3*(5*24+5)
	for l := range cent {
		want := min(dist2(c[p:], cent[l][:])/(2*s2), 10)
		if !closeRel(float64(unary[4*3+l]), want, 1e-6) {
			t.Errorf("θ(4,5)(%d) = %v, want %v", l, unary[4*3+l], want)
		}
	}
	if want := math.Exp(-dist2(c[p:], c[q:]) / (2 * beta)); !closeRel(float64(weights[8]), want, 1e-6) {
		t.Errorf("w right of (4,5) = %v, want %v", weights[8], want)
	}
	if weights[2*23] != 0 || weights[2*23+1] == 0 {
		t.Errorf("last pixel of a row: weights %v, want right 0 and down > 0", weights[46:])
	}
}

func TestSegmentationIsDeterministic(t *testing.T) {
	img := load(t, "testdata/blocks.png")
	dir := t.TempDir()
	for _, ext := range []string{".grid", ".uai"} {
		var files [2][]byte
		for i := range files {
			seg, err := Segmentation(img, 4, SegOptions{Lambda: 0.7})
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "m"+string(rune('a'+i))+ext)
			if err := WriteFile(p, seg, WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			if files[i], err = os.ReadFile(p); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(files[0], files[1]) {
			t.Errorf("%s: two runs wrote different files", ext)
		}
	}
}

func TestSegmentationOfSharedImage(t *testing.T) {
	img := loadShared(t, "opencv-doc-debian/fruits.jpg")
	start := time.Now()
	seg, err := Segmentation(img, 5, SegOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "fruits.grid")
	if err := WriteFile(p, seg, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	g, err := grid.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	h := seg.Header()
	if g.NumVars() != h.Width*h.Height || h.Labels != 5 {
		t.Fatalf("%d variables, %d labels", g.NumVars(), h.Labels)
	}
	if e := g.Energy(seg.Labeling()); math.IsInf(e, 0) || math.IsNaN(e) {
		t.Errorf("energy of the k-means labeling %v", e)
	}
	t.Logf("fruits %d×%d k=5: k-means + grid file in %v (%.1f Mpixel/s)", h.Width, h.Height, el, float64(h.Width*h.Height)/el.Seconds()/1e6)
}

func TestSegmentationOfUniformImage(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 5, 4))
	for i := range img.Pix {
		img.Pix[i] = 128
	}
	seg, err := Segmentation(img, 3, SegOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(seg)
	if err != nil {
		t.Fatal(err)
	}
	if e := m.Energy(seg.Labeling()); e != 0 {
		t.Errorf("uniform image: k-means labeling energy %v, want 0", e)
	}
}

func TestStereoModel(t *testing.T) {
	for _, contrast := range []bool{false, true} {
		st, err := Stereo(load(t, "testdata/left.png"), load(t, "testdata/right.png"), 5, StereoOptions{Contrast: contrast})
		if err != nil {
			t.Fatal(err)
		}
		h := st.Header()
		wantMode := grid.Shared
		if contrast {
			wantMode = grid.PerEdge
		}
		if h.Width != 20 || h.Height != 12 || h.Labels != 5 || h.Kind != model.TruncatedLinear || h.Mode != wantMode || h.T != 2 {
			t.Fatalf("header %+v", h)
		}
		g, u := writeBoth(t, st)
		// The true disparities (1, and 3 on the square) have zero data cost where
		// the match exists, so they beat the constant labelings.
		truth := make([]int, 20*12)
		for y := range 12 {
			for x := range 20 {
				truth[y*20+x] = 1
				if x >= 8 && x < 14 && y >= 3 && y < 9 {
					truth[y*20+x] = 3
				}
			}
		}
		sameEnergies(t, st, g, u, truth)
		for d := range 5 {
			flat := make([]int, len(truth))
			for i := range flat {
				flat[i] = d
			}
			if g.Energy(flat) <= g.Energy(truth) {
				t.Errorf("contrast %v: constant disparity %d has energy %v ≤ truth %v", contrast, d, g.Energy(flat), g.Energy(truth))
			}
		}
	}
}

func TestStereoTsukuba(t *testing.T) {
	l := loadShared(t, "middlebury-tsukuba/tsukuba1.bmp")
	r := loadShared(t, "middlebury-tsukuba/tsukuba2.bmp")
	st, err := Stereo(l, r, 16, StereoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "tsukuba.grid")
	if err := WriteFile(p, st, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	g, err := grid.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	h := st.Header()
	if g.NumVars() != h.Width*h.Height || h.Labels != 16 || g.NumFactors() == 0 {
		t.Fatalf("%d variables, %d labels, %d factors", g.NumVars(), h.Labels, g.NumFactors())
	}
}

func TestStereoCones(t *testing.T) {
	l := loadShared(t, "middlebury-cones-pandora/left.tif")
	r := loadShared(t, "middlebury-cones-pandora/right.tif")
	st, err := Stereo(l, r, 64, StereoOptions{Contrast: true})
	if err != nil {
		t.Fatal(err)
	}
	if h := st.Header(); h.Width != 450 || h.Height != 375 {
		t.Errorf("cones %d×%d, want 450×375", h.Width, h.Height)
	}
}

func TestBadInputs(t *testing.T) {
	img := load(t, "testdata/blocks.png")
	if _, err := Segmentation(img, 0, SegOptions{}); err == nil {
		t.Error("k = 0 accepted")
	}
	if _, err := Segmentation(img, 2, SegOptions{Lambda: -1}); err == nil {
		t.Error("λ < 0 accepted")
	}
	if _, err := Stereo(img, load(t, "testdata/left.png"), 3, StereoOptions{}); err == nil {
		t.Error("stereo pair of different sizes accepted")
	}
	if _, err := Stereo(img, img, 25, StereoOptions{}); err == nil {
		t.Error("more disparities than the width accepted")
	}
	seg, _ := Segmentation(img, 2, SegOptions{})
	if err := WriteFile(filepath.Join(t.TempDir(), "m.png"), seg, WriteOptions{}); !errors.Is(err, ErrOutputFormat) {
		t.Errorf("writing .png: %v, want ErrOutputFormat", err)
	}
	for _, ok := range []string{"a.grid", "a.GRID", "a.uai", "a.uai.gz", "a.LG"} {
		if err := CheckOutput(ok); err != nil {
			t.Errorf("CheckOutput(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"a", "a.wcsp", "a.uai.xz", "a.png"} {
		if err := CheckOutput(bad); err == nil {
			t.Errorf("CheckOutput(%q) accepted", bad)
		}
	}
	p := filepath.Join(t.TempDir(), "junk.png")
	os.WriteFile(p, []byte("not an image"), 0o644)
	if _, err := LoadImage(p); err == nil {
		t.Error("junk image decoded")
	}
}

// TestImageDeclaringBillionsOfPixelsIsRefused: a PNG whose header declares
// 60000×60000 pixels (its data a single pixel's) is refused from its header, with
// the size named, before anything is allocated for its pixels.
func TestImageDeclaringBillionsOfPixelsIsRefused(t *testing.T) {
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	// IHDR follows the 8-byte signature: length (4), "IHDR" (4), width, height, ….
	binary.BigEndian.PutUint32(data[16:], 60000)
	binary.BigEndian.PutUint32(data[20:], 60000)
	binary.BigEndian.PutUint32(data[29:], crc32.ChecksumIEEE(data[12:29]))
	p := filepath.Join(t.TempDir(), "bomb.png")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := LoadImage(p)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "60000×60000") {
		t.Errorf("%v, want the declared size refused", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("refusing it allocated %d bytes", n)
	}
}

func TestTiledMirrorsAndPerturbs(t *testing.T) {
	img := load(t, "testdata/blocks.png")
	tm, err := Tiled(img, 24*3+5, 16*2+3, 3, 9, TiledOptions{Perturb: -1})
	if err != nil {
		t.Fatal(err)
	}
	seg, _ := Segmentation(img, 3, SegOptions{})
	// Without perturbation, tile (1,0) is tile (0,0) mirrored: pixel (24+x, y) has
	// the unaries of pixel (23−x, y).
	k := 3
	tu, tw := make([]float32, tm.w*k), make([]float32, tm.w*2)
	su, sw := make([]float32, 24*k), make([]float32, 48)
	for _, y := range []int{0, 7, 15} {
		tm.Row(y, tu, tw)
		seg.Row(y, su, sw)
		for x := range 24 {
			for l := range k {
				if tu[(24+x)*k+l] != su[(23-x)*k+l] || tu[x*k+l] != su[x*k+l] {
					t.Fatalf("row %d x %d: tiled unaries are not the mirrored source", y, x)
				}
			}
		}
	}
	tm.Row(16, tu, tw) // row 16 mirrors row 15
	seg.Row(15, su, sw)
	if tu[0] != su[0] {
		t.Errorf("row 16 does not mirror row 15")
	}
	// With perturbation the tiles differ, and the model files agree.
	tp, err := Tiled(img, 24*3+5, 16*2+3, 3, 9, TiledOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tp.Row(0, tu, tw)
	seg.Row(0, su, sw)
	same := true
	for x := range 24 {
		same = same && tu[(24+x)*k] == su[(23-x)*k]
	}
	if same {
		t.Error("perturbed tile (1,0) equals the mirrored source")
	}
	g, u := writeBoth(t, tp)
	sameEnergies(t, tp, g, u)
}

// TestTiledStreamsInBoundedMemory streams a 4096×2048 model (8.4 Mpixel, 200 MB of
// grid file) and samples the live heap while it runs.
func TestTiledStreamsInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	img := load(t, "testdata/blocks.png")
	const W, H, K = 4096, 2048, 4
	tm, err := Tiled(img, W, H, K, 42, TiledOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
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
	p := filepath.Join(t.TempDir(), "big.grid")
	start := time.Now()
	err = WriteFile(p, tm, WriteOptions{TileSize: 128})
	el := time.Since(start)
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	heap := float64(peak.Load()) / (1 << 20)
	t.Logf("tiled %d×%d k=%d: %.0f MB in %v: %.1f Mpixel/s, %.0f MB/s; peak live heap %.1f MB (%.1f MB before)",
		W, H, K, float64(fi.Size())/1e6, el, W*H/el.Seconds()/1e6, float64(fi.Size())/el.Seconds()/1e6, heap, float64(base.HeapAlloc)/(1<<20))
	if heap >= 100 {
		t.Errorf("peak live heap %.1f MB, want < 100 MB", heap)
	}
	// Spot-check a window against the generator.
	r, err := grid.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if h := r.Header(); h.Width != W || h.Height != H || h.Labels != K {
		t.Fatalf("header %+v", h)
	}
	win, err := r.ReadWindow(1000, 1500, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	unary, weights := make([]float32, W*K), make([]float32, 2*W)
	tm.Row(1500, unary, weights)
	m := win.Model
	if m.NumVars() != 3 {
		t.Fatalf("window has %d variables", m.NumVars())
	}
	x := []int{1, 2, 3}
	want := float64(unary[1000*K+1]) + float64(unary[1001*K+2]) + float64(unary[1002*K+3]) + float64(weights[2*1000]) + float64(weights[2*1001])
	if e := m.Energy(x); !closeRel(e, want, 1e-6) {
		t.Errorf("window energy %v, generator %v", e, want)
	}
}

func TestMirror(t *testing.T) {
	want := []int{0, 1, 2, 2, 1, 0, 0, 1}
	for i, w := range want {
		if g := mirror(i, 3); g != w {
			t.Errorf("mirror(%d, 3) = %d, want %d", i, g, w)
		}
	}
}
