package labelfile_test

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"

	"github.com/partopt/partopt/model/labelfile"
)

// A 6×4 persistency map of 3 labels is written by rectangles, completed by Close,
// opened, read back and drawn with its labeling.
func Example() {
	dir, _ := os.MkdirTemp("", "labelfile")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "persistent.lab")

	f, err := labelfile.Create(path, labelfile.Header{Width: 6, Height: 4, Labels: 3, Kind: labelfile.Persistent,
		TileWidth: 4, TileHeight: 4})
	if err != nil {
		panic(err)
	}
	// pixels (1..3, 1..2) proven: labels 0,1,2 in each row (stored as label+1)
	if err := f.WriteRect(1, 1, 3, 2, []int32{1, 2, 3, 1, 2, 3}); err != nil {
		panic(err)
	}
	if err := f.Close(); err != nil {
		panic(err)
	}

	p, err := labelfile.Open(path)
	if err != nil {
		panic(err)
	}
	defer p.Close()
	row := make([]int32, 6)
	if err := p.ReadRect(0, 1, 6, 1, row); err != nil {
		panic(err)
	}
	fmt.Println("row 1:", row)

	labeling := labelfile.Slice(labelfile.Header{Width: 6, Height: 4, Labels: 3}, make([]int32, 24))
	var png1 bytes.Buffer
	if err := labelfile.RenderPNG(&png1, labeling, p, 3); err != nil { // 6×4 → 3×2
		panic(err)
	}
	cfg, _ := png.DecodeConfig(&png1)
	fmt.Printf("PNG %d×%d\n", cfg.Width, cfg.Height)
	// Output:
	// row 1: [0 1 2 3 0 0]
	// PNG 3×2
}
