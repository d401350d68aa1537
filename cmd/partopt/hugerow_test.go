package main

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/internal/header"
	"github.com/partopt/partopt/model/labelfile"
)

// TestHugeRowLabelFileInSmallMemory is issue 35's attack 4: a valid label
// file of one row of 2³¹−1 pixels, 8 KB on disk, made export hold the row
// as int32s (8 GB) and die. Under a 2 GB address-space limit (ulimit -v) and
// a 1 MB file-size limit (ulimit -f, so that no gigabytes are written),
// export to .npy and .tif streams until the file-size limit stops it, one
// line saying so and no temporary file left; a row of 2²⁸−1 pixels, where
// image/png held six rows and the band 1 GB more, exports whole as a PNG
// that inflates to its rows; energy and verify against a model of other
// dimensions refuse the file from its header.
func TestHugeRowLabelFileInSmallMemory(t *testing.T) {
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	capped := func(fileBlocks int, args ...string) (int, string) {
		t.Helper()
		script := fmt.Sprintf(`ulimit -v %d && ulimit -f %d && exec "$0" "$@"`, addressSpaceLimit, fileBlocks)
		cmd := exec.Command("sh", append([]string{"-c", script, bin}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Run()
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
	row := filepath.Join(dir, "row.plf")
	writeSparseLabelFile(t, row, labelfile.Header{Width: labelfile.MaxSide, Height: 1, Labels: 2, TileWidth: 1 << 20, TileHeight: 1})
	for _, ext := range []string{".npy", ".tif"} {
		out := filepath.Join(t.TempDir(), "x"+ext)
		code, stderr := capped(2048, "export", row, "-o", out) // 1 MB
		if code != exitInternal || !strings.Contains(stderr, "file too large") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("export %s under 2 GB of address space and 1 MB of file: exit %d, %q; want exit 1 and one line saying the file is too large", ext, code, stderr)
		}
		if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
			t.Errorf("export %s left %s", ext, entries[0].Name())
		}
	}

	const width = 1<<28 - 1
	pngRow := filepath.Join(dir, "row28.plf")
	writeSparseLabelFile(t, pngRow, labelfile.Header{Width: width, Height: 1, Labels: 2, TileWidth: 1 << 20, TileHeight: 1})
	out := filepath.Join(dir, "x.png")
	if code, stderr := capped(64<<10, "export", pngRow, "-o", out); code != 0 { // 32 MB
		t.Fatalf("export .png of 2²⁸−1 pixels: exit %d, %s", code, stderr)
	}
	if n := inflatePNG(t, out, width, 1); n != width+1 {
		t.Errorf("the PNG inflates to %d bytes, want %d: a filter byte, then the row", n, width+1)
	}

	small := filepath.Join(dir, "small.grid")
	writeZeroGrid(t, small, 5, 5)
	res := solveOut(t, small, "--window", "4")
	if err := os.Rename(row, filepath.Join(res, labelTilesFile)); err != nil {
		t.Fatal(err)
	}
	row = filepath.Join(res, labelTilesFile)
	for _, args := range [][]string{
		{"energy", small, row},
		{"verify", small, res},
	} {
		code, stderr := capped(2048, args...)
		if code != exitBadInput || !strings.Contains(stderr, "2147483647×1") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line naming the raster's 2147483647×1 pixels", args, code, stderr)
		}
	}
}

// writeSparseLabelFile writes a finished label file of h's raster, every value
// 0, by the format's layout (model/labelfile's package doc): the header, the
// tiles as a hole, the tile index (the CRC32C of each tile of zeros).
// labelfile.Create and Close would make the same file, but Close reads the
// holes to checksum them: 20 s for 2 GB.
func writeSparseLabelFile(t *testing.T, path string, h labelfile.Header) {
	t.Helper()
	le := binary.LittleEndian
	b := header.New(labelfile.Magic, labelfile.Version, labelfile.HeaderSize)
	tx, ty := (h.Width+h.TileWidth-1)/h.TileWidth, (h.Height+h.TileHeight-1)/h.TileHeight
	bpv := h.BytesPerValue()
	indexOff := int64(labelfile.HeaderSize) + int64(h.Width)*int64(h.Height)*int64(bpv)
	le.PutUint32(b[16:], uint32(h.Width))
	le.PutUint32(b[20:], uint32(h.Height))
	le.PutUint32(b[24:], uint32(h.Labels))
	b[28], b[29] = byte(h.Kind), byte(bpv)
	le.PutUint32(b[32:], uint32(h.TileWidth))
	le.PutUint32(b[36:], uint32(h.TileHeight))
	le.PutUint64(b[40:], uint64(tx*ty))
	le.PutUint64(b[48:], uint64(indexOff))
	crcs := map[int]uint32{} // of a tile of zeros, by its bytes
	var index []byte
	for j := range ty {
		for i := range tx {
			n := (min(h.TileWidth, h.Width-i*h.TileWidth)) * min(h.TileHeight, h.Height-j*h.TileHeight) * bpv
			if _, ok := crcs[n]; !ok {
				crcs[n] = crc32.Checksum(make([]byte, n), header.Castagnoli)
			}
			index = le.AppendUint32(index, crcs[n])
		}
	}
	le.PutUint32(b[56:], crc32.Checksum(index, header.Castagnoli))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(header.Seal(b)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(index, indexOff); err != nil {
		t.Fatal(err)
	}
	if r, err := labelfile.Open(path); err != nil { // the layout is right
		t.Fatal(err)
	} else {
		r.Close()
	}
}

// inflatePNG checks the PNG at path, a w×h image of 8-bit grey, chunk by
// chunk (lengths, CRCs) and returns the number of bytes its image data
// inflates to, all of which must be zero, without holding them.
func inflatePNG(t *testing.T, path string, w, h int) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sig := make([]byte, 8)
	if _, err := io.ReadFull(f, sig); err != nil || string(sig) != "\x89PNG\r\n\x1a\n" {
		t.Fatalf("signature % x, %v", sig, err)
	}
	pr, pw := io.Pipe()
	go func() { // the IDAT data, checked chunk by chunk, into the pipe
		for {
			var head [8]byte
			if _, err := io.ReadFull(f, head[:]); err != nil {
				pw.CloseWithError(err)
				return
			}
			data := make([]byte, binary.BigEndian.Uint32(head[:])+4)
			if _, err := io.ReadFull(f, data); err != nil {
				pw.CloseWithError(err)
				return
			}
			typ, body := string(head[4:]), data[:len(data)-4]
			if crc32.Update(crc32.ChecksumIEEE(head[4:]), crc32.IEEETable, body) != binary.BigEndian.Uint32(data[len(body):]) {
				pw.CloseWithError(fmt.Errorf("%s chunk: CRC mismatch", typ))
				return
			}
			switch typ {
			case "IHDR":
				if want := fmt.Sprint(w, h, 8, 0); fmt.Sprint(binary.BigEndian.Uint32(body), binary.BigEndian.Uint32(body[4:]), body[8], body[9]) != want {
					pw.CloseWithError(fmt.Errorf("IHDR % x, want %s", body, want))
					return
				}
			case "IDAT":
				pw.Write(body)
			case "IEND":
				pw.Close()
				return
			}
		}
	}()
	defer pr.Close() // and the writer with it
	zr, err := zlib.NewReader(pr)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	buf := make([]byte, 1<<20)
	for {
		k, err := zr.Read(buf)
		if len(bytes.Trim(buf[:k], "\x00")) != 0 {
			t.Fatalf("a nonzero byte within %d bytes of offset %d", k, n)
		}
		n += int64(k)
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
