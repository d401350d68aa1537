package partition_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/partopt/partopt/gen"
	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
)

// TestWindowsTable prints the windowed-vs-whole table of docs/BENCHMARKS.md: colour
// segmentations of the images in ../shared/images, solved whole and by windows of
// several sizes. It takes about half an hour: run with
// PARTOPT_TABLE=1 go test ./partition -run WindowsTable -v -timeout 120m
func TestWindowsTable(t *testing.T) {
	if os.Getenv("PARTOPT_TABLE") == "" {
		t.Skip("set PARTOPT_TABLE=1 to build the windows table (about half an hour)")
	}
	images := []string{
		"opencv-doc-debian/fruits.jpg", "opencv-doc-debian/baboon.jpg", "opencv-doc-debian/home.jpg",
		"skimage-debian/astronaut.png", "skimage-debian/coffee.png", "skimage-debian/chelsea.png",
	}
	type size struct{ core, halo int }
	sizes := []size{{64, 8}, {128, 16}, {256, 32}}
	fmt.Printf("| image | K | λ | whole | s | %s\n", func() string {
		s := ""
		for _, z := range sizes {
			s += fmt.Sprintf("%d+%d | s | ", z.core, z.halo)
		}
		return s
	}())
	for _, name := range images {
		path := testutil.SharedPath("images", name)
		testutil.SkipWithoutShared(t, path)
		img, err := gen.LoadImage(path)
		if err != nil {
			t.Fatal(err)
		}
		w, h := img.Bounds().Dx(), img.Bounds().Dy()
		for _, c := range []struct {
			k      int
			lambda float64
		}{{4, 1}, {5, 4}} {
			src, err := gen.Segmentation(img, c.k, gen.SegOptions{Lambda: c.lambda})
			if err != nil {
				t.Fatal(err)
			}
			m, err := gen.Build(src)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			whole, err := persistency.Run(context.Background(), m, persistency.Options{})
			if err != nil {
				t.Fatal(err)
			}
			row := fmt.Sprintf("| %s | %d | %g | %.4f | %.1f |", filepath.Base(name), c.k, c.lambda, whole.Score, time.Since(start).Seconds())
			r, err := partition.RasterOf(m, w, h)
			if err != nil {
				t.Fatal(err)
			}
			for _, z := range sizes {
				st := func() *partition.MemStore { return partition.NewMemStore(w, h) }
				pers := st()
				start := time.Now()
				res, err := partition.SolveRaster(context.Background(), r, pers, st(), st(),
					partition.RasterOptions{Core: z.core, Halo: z.halo, Workers: 2, MaxRounds: 3})
				if err != nil {
					t.Fatal(err)
				}
				proven := make([]int, len(pers.Values))
				for v, p := range pers.Values {
					proven[v] = int(p) - 1
				}
				score, _ := persistency.Score(m, proven)
				row += fmt.Sprintf(" %.4f (%d) | %.1f |", score, res.Rounds, time.Since(start).Seconds())
			}
			fmt.Println(row)
		}
	}
}
