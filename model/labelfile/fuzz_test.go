package labelfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/model/labelfile"
)

// FuzzOpen opens arbitrary bytes as a file and reads the whole raster and a window:
// it returns an error naming the file and wrapping ErrCorrupt or values within the
// kind's range, and never panics. With resign, the checksums of the input are
// recomputed first (where its sizes are consistent), so that mutations reach the
// checks behind them. Seeds: small files of every value width, a file never closed,
// and the bare magic.
// Run: go test ./model/labelfile -run NONE -fuzz FuzzOpen -fuzztime 1m
func FuzzOpen(f *testing.F) {
	for i, h := range []labelfile.Header{
		{Width: 5, Height: 4, Labels: 3, TileWidth: 2, TileHeight: 3},
		{Width: 3, Height: 6, Labels: 300, Kind: labelfile.Persistent, TileWidth: 4, TileHeight: 2},
		{Width: 4, Height: 3, Labels: 65536, Kind: labelfile.Persistent, TileWidth: 3, TileHeight: 3},
		{Width: 1, Height: 1, Labels: 1},
	} {
		_, data, _ := validFile(f, h, uint64(i))
		f.Add(data, false)
		f.Add(data, true)
	}
	w, path := create(f, labelfile.Header{Width: 3, Height: 2, Labels: 2})
	if data, err := os.ReadFile(path); err == nil {
		f.Add(data, false)
	}
	w.Close()
	f.Add([]byte(labelfile.Magic), false)
	// Calls are sequential within a fuzzing process, so one path will do.
	path = filepath.Join(f.TempDir(), "fuzz.lab")
	f.Fuzz(func(t *testing.T, data []byte, resign bool) {
		if resign {
			resignFuzz(data)
		}
		if err := os.WriteFile(path, data, 0o666); err != nil {
			t.Fatal(err)
		}
		check := func(err error) bool {
			if err == nil {
				return true
			}
			if !errors.Is(err, labelfile.ErrCorrupt) || !strings.HasPrefix(err.Error(), path+": ") {
				t.Fatalf("error %q does not name the file and wrap ErrCorrupt", err)
			}
			return false
		}
		r, err := labelfile.Open(path)
		if !check(err) {
			return
		}
		defer r.Close()
		h := r.Header()
		all := make([]int32, h.Width*h.Height)
		if !check(r.ReadRect(0, 0, h.Width, h.Height, all)) {
			return
		}
		for i, v := range all {
			if v < 0 || int(v) > h.MaxValue() {
				t.Fatalf("pixel %d: value %d outside [0,%d]", i, v, h.MaxValue())
			}
		}
		x0, y0 := h.Width/3, h.Height/2
		win := make([]int32, (h.Width-x0)*(h.Height-y0))
		if err := r.ReadRect(x0, y0, h.Width-x0, h.Height-y0, win); err != nil {
			t.Fatalf("the whole raster reads but a window fails: %v", err)
		}
		for j := range h.Height - y0 {
			for i := range h.Width - x0 {
				if win[j*(h.Width-x0)+i] != all[(y0+j)*h.Width+x0+i] {
					t.Fatalf("window pixel (%d,%d) differs from the whole raster's", x0+i, y0+j)
				}
			}
		}
	})
}

// resignFuzz recomputes the checksums of data when its header's sizes match its
// length (signAll), else only the header checksum.
func resignFuzz(data []byte) {
	if len(data) < labelfile.HeaderSize {
		return
	}
	l := layoutOf(data)
	ok := l.w > 0 && l.h > 0 && l.tw > 0 && l.th > 0 && (l.bpv == 1 || l.bpv == 2 || l.bpv == 4) &&
		l.w <= len(data) && l.h <= len(data)
	if ok {
		tiles := ((l.w + l.tw - 1) / l.tw) * ((l.h + l.th - 1) / l.th)
		ok = l.w*l.h <= len(data) && labelfile.HeaderSize+l.w*l.h*l.bpv+4*tiles == len(data)
	}
	if ok {
		signAll(data)
	} else {
		signHeader(data)
	}
}
