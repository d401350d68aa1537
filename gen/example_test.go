package gen_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/partopt/partopt/gen"
	"github.com/partopt/partopt/model/grid"
)

// Segment a small image into 3 colour classes, stream the model to a grid file and
// evaluate the k-means labeling on the model read back.
func ExampleSegmentation() {
	img, err := gen.LoadImage("testdata/blocks.png")
	if err != nil {
		fmt.Println(err)
		return
	}
	seg, err := gen.Segmentation(img, 3, gen.SegOptions{}) // λ = 1, cap 10
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, _ := os.MkdirTemp("", "gen-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "blocks.grid")
	if err := gen.WriteFile(path, seg, gen.WriteOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	m, err := grid.ReadFile(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.NumVars(), "pixels,", m.NumLabels(0), "labels, k-means energy finite:", m.Energy(seg.Labeling()) < 1e9)
	// Output: 384 pixels, 3 labels, k-means energy finite: true
}
