package hdf5

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/partopt/partopt/internal/expansion"
	"github.com/partopt/partopt/internal/testutil"
)

func TestListSorted(t *testing.T) {
	f := openFixture(t, "sb0.h5")
	root, err := f.List("/")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"be", "layout", "many", "multi", "nested", "other", "types"}
	if !slices.Equal(root, want) {
		t.Fatalf("List(/) = %v, want %v", root, want)
	}
	if r2, err := f.List(""); err != nil || !slices.Equal(r2, root) {
		t.Fatalf(`List("") = %v, %v`, r2, err)
	}
	if got, err := f.List("nested/a"); err != nil || !slices.Equal(got, []string{"b", "x"}) {
		t.Fatalf("List(nested/a) = %v, %v", got, err)
	}
	if _, err := f.List("types/u64"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("List of a dataset: %v, want ErrNotFound", err)
	}
	for p, want := range map[string]bool{"": true, "nested/a": true, "types/u64": false} {
		if g, err := f.IsGroup(p); err != nil || g != want {
			t.Fatalf("IsGroup(%q) = %v, %v", p, g, err)
		}
	}
	if _, err := f.List("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("List(nope): %v, want ErrNotFound", err)
	}
}

// TestManyMembers reads groups of many members: in sb0.h5 an old-style group of
// 216 members (16 datasets, 200 hard links to them) whose B-tree has more than
// one level, in sb2.h5 a group with dense link storage of 212 members (12
// datasets, 200 links) whose fractal heap has an indirect root block and whose
// name index (a version 2 B-tree) has internal nodes.
func TestManyMembers(t *testing.T) {
	for _, tc := range []struct {
		file     string
		datasets int
	}{{"sb0.h5", 16}, {"sb2.h5", 12}} {
		f := openFixture(t, tc.file)
		names, err := f.List("many")
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != tc.datasets+200 || !slices.IsSorted(names) {
			t.Fatalf("%s: %d names, sorted %v", tc.file, len(names), slices.IsSorted(names))
		}
		for i := range 200 {
			d, err := f.Dataset(fmt.Sprintf("many/l%03d", i))
			if err != nil {
				t.Fatal(err)
			}
			v, err := d.Int64s(1)
			if err != nil {
				t.Fatal(err)
			}
			if len(v) != 1 || v[0] != int64(i%tc.datasets) {
				t.Fatalf("%s: many/l%03d = %v, want [%d]", tc.file, i, v, i%tc.datasets)
			}
		}
	}
	// The structures must have grown for this test to exercise them.
	f := openFixture(t, "sb0.h5")
	addr, err := f.resolve("many")
	if err != nil {
		t.Fatal(err)
	}
	h, err := f.objectHeader(addr, "many")
	if err != nil {
		t.Fatal(err)
	}
	m := h.first(msgSymbolTable)
	btree := f.decoder(m.data, m.at, "").addr()
	b, err := f.readAt(btree, 8, "")
	if err != nil {
		t.Fatal(err)
	}
	if b[5] < 1 {
		t.Errorf("sb0.h5: group B-tree root at level %d, want ≥ 1", b[5])
	}
	f = openFixture(t, "sb2.h5")
	if addr, err = f.resolve("many"); err != nil {
		t.Fatal(err)
	}
	if h, err = f.objectHeader(addr, "many"); err != nil {
		t.Fatal(err)
	}
	heap, index, err := f.decodeLinkInfo(h.first(msgLinkInfo))
	if err != nil {
		t.Fatal(err)
	}
	if b, err = f.readAt(heap, 200, ""); err != nil {
		t.Fatal(err)
	}
	fh, err := f.fractalHeap(heap)
	if err != nil {
		t.Fatal(err)
	}
	if len(fh.blocks) < 2 {
		t.Errorf("sb2.h5: fractal heap of %d direct blocks, want an indirect root", len(fh.blocks))
	}
	if b, err = f.readAt(index, 16, ""); err != nil {
		t.Fatal(err)
	}
	if depth := int(b[12]) | int(b[13])<<8; depth < 1 {
		t.Errorf("sb2.h5: name index of depth %d, want ≥ 1", depth)
	}
}

func TestPaths(t *testing.T) {
	f := openFixture(t, "sb2.h5")
	for _, p := range []string{"nested/a/b/data", "/nested/a/b/data", "nested//a/b/data/"} {
		d, err := f.Dataset(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if v, err := d.Uint64s(0); err != nil || !slices.Equal(v, []uint64{7, 8, 9}) {
			t.Fatalf("%s = %v, %v", p, v, err)
		}
	}
	for _, p := range []string{"nested/a/c", "nested/a/b/data/x", "types/nope"} {
		_, err := f.Dataset(p)
		if err == nil || !strings.Contains(err.Error(), "/nested") && !strings.Contains(err.Error(), "/types") {
			t.Fatalf("Dataset(%s): %v, want an error naming the path", p, err)
		}
	}
	if _, err := f.Dataset("nested/a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Dataset of a group: %v, want ErrNotFound", err)
	}
}

func TestConversions(t *testing.T) {
	f := openFixture(t, "sb0.h5")
	get := func(p string) *Dataset {
		d, err := f.Dataset(p)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if _, err := get("types/i32").Uint64s(0); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("Uint64s of negative integers: %v", err)
	}
	if _, err := get("types/u64").Int64s(0); err == nil || !strings.Contains(err.Error(), "overflows") {
		t.Fatalf("Int64s of 2^64-1: %v", err)
	}
	if _, err := get("types/f64").Uint64s(0); !errors.Is(err, ErrConversion) {
		t.Fatalf("Uint64s of floats: %v, want ErrConversion", err)
	}
	if _, err := get("types/i8").Uint64s(0); !errors.Is(err, ErrConversion) {
		t.Fatalf("Uint64s of negative int8: %v, want ErrConversion", err)
	}
	if v, err := get("types/u8").Int64s(0); err != nil || v[1] != 15 {
		t.Fatalf("Int64s of u8: %v, %v", v, err)
	}
	if v, err := get("types/i64").Float64s(0); err != nil || v[0] != -(1<<63) {
		t.Fatalf("Float64s of i64: %v, %v", v, err)
	}
	d := get("layout/gzip")
	if _, err := d.Float64s(399); !errors.Is(err, ErrLimit) {
		t.Fatalf("limit 399 on 400 elements: %v, want ErrLimit", err)
	}
	if v, err := d.Float64s(400); err != nil || len(v) != 400 {
		t.Fatalf("limit 400: %d values, %v", len(v), err)
	}
	if s := get("layout/scalar"); len(s.Shape()) != 0 || s.Len() != 1 {
		t.Fatalf("scalar: shape %v, Len %d", s.Shape(), s.Len())
	}
	if c := get("other/str").Class(); c != String {
		t.Fatalf("class of a string dataset: %v", c)
	}
	if f.SuperblockVersion() != 0 {
		t.Fatalf("superblock version %d", f.SuperblockVersion())
	}
}

// TestDeclaredSizeBound makes a dataset declare far more elements than the file
// could hold: reading it is refused as a bomb instead of allocating.
func TestDeclaredSizeBound(t *testing.T) {
	data, err := os.ReadFile("testdata/sb0.h5")
	if err != nil {
		t.Fatal(err)
	}
	f := openFixture(t, "sb0.h5")
	d, err := f.Dataset("layout/gzip")
	if err != nil {
		t.Fatal(err)
	}
	h, err := f.objectHeader(d.addr, "")
	if err != nil {
		t.Fatal(err)
	}
	m := h.first(msgDataspace)
	// Version 1 dataspace: 8 bytes of prefix, then the dimension (8 bytes).
	at := m.at + 8
	big := append([]byte(nil), data...)
	copy(big[at:], []byte{0, 0, 0, 0, 0, 0, 0x10, 0}) // 2^52 elements
	g, err := Open(strings.NewReader(string(big)), int64(len(big)))
	if err != nil {
		t.Fatal(err)
	}
	d, err = g.Dataset("layout/gzip")
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 1<<52 {
		t.Fatalf("Len %d after patching", d.Len())
	}
	if _, err := d.Float64s(0); !errors.Is(err, expansion.ErrBomb) {
		t.Fatalf("Float64s: %v, want expansion.ErrBomb", err)
	}
}

// TestLayout4Indexes checks that the libver='latest' fixtures exercise each chunk
// index of layout message version 4 that the package reads.
func TestLayout4Indexes(t *testing.T) {
	f := openFixture(t, "sb3.h5")
	for path, want := range map[string]int{"v4/single": indexSingle, "v4/single_gzip": indexSingle,
		"v4/implicit": indexImplicit, "v4/paged": indexFixedArray, "layout/gzip": indexFixedArray,
		"v4/extensible": indexExtArray} {
		d, err := f.Dataset(path)
		if err != nil {
			t.Fatal(err)
		}
		if d.index != want {
			t.Errorf("%s: chunk index %d, want %d", path, d.index, want)
		}
	}
	d, err := f.Dataset("v4/paged")
	if err != nil {
		t.Fatal(err)
	}
	v, err := d.Uint64s(0)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range v {
		if x != uint64(i%251) {
			t.Fatalf("v4/paged[%d] = %d", i, x)
		}
	}
}

// eofReader reports io.EOF with every read, even complete ones: io.ReaderAt
// allows that at the end of the input, and a full read must count as success
// wherever it happens.
type eofReader struct{ b []byte }

func (r eofReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(r.b)) {
		return 0, io.EOF
	}
	return copy(p, r.b[off:]), io.EOF
}

func TestReaderAtEOF(t *testing.T) {
	data, err := os.ReadFile("testdata/small0.h5")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(eofReader{data}, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"c", "z", "g/u"} {
		d, err := f.Dataset(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Float64s(0); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeclaredSizesAddUp: the bound holds for all the datasets a file's reader
// decodes, not for each alone — a file cannot spread a bomb over many
// datasets, each within the bound.
func TestDeclaredSizesAddUp(t *testing.T) {
	f := openFixture(t, "sb0.h5")
	most := f.maxBytes()
	if !f.spend(most/2+1) || f.spend(most/2+1) || !f.spend(most/2-1) || f.spend(1) {
		t.Errorf("spending half the bound twice, then what is left, then one byte more: spent %d of %d", f.spent(), most)
	}
}

// TestDeflatedDatasetsStayWithinTheBudget: a dataset of zeros deflated 820:1
// reads while its values fit in expansion.Budget of the file (here within the
// slack), and is refused from its declared shape, naming it, before a chunk is
// inflated once they do not — though it is within what deflate can pack and
// within the 1024× bound this package once had.
func TestDeflatedDatasetsStayWithinTheBudget(t *testing.T) {
	for _, c := range []struct {
		k1, k2 int
		bomb   bool
	}{
		{1 << 6, 1 << 14, false}, // 8 MiB of values
		{1 << 7, 1 << 15, true},  // 32 MiB
	} {
		data := testutil.OpenGMTableBomb(c.k1, c.k2)
		f, err := Open(strings.NewReader(string(data)), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		d, err := f.Dataset("gm/function-id-16000/values")
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		v, err := d.Float64s(0)
		runtime.ReadMemStats(&after)
		if !c.bomb {
			if err != nil || len(v) != c.k1*c.k2 {
				t.Errorf("%d values in %d bytes: %d read, %v", c.k1*c.k2, len(data), len(v), err)
			}
			continue
		}
		want := fmt.Sprintf("hdf5: /gm/function-id-16000/values: %d values, %d bytes once read, more than 128× the file's %d bytes plus 16 MiB: refused as a decompression bomb", c.k1*c.k2, 8*c.k1*c.k2, len(data))
		if !errors.Is(err, expansion.ErrBomb) || err.Error() != want {
			t.Errorf("%v\nwant %s", err, want)
		}
		if 1024*len(data)+1<<20 < 8*c.k1*c.k2 { // the old bound

			t.Errorf("%d bytes of values in %d bytes: beyond the old bound too, no test of the new", 8*c.k1*c.k2, len(data))
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Errorf("refusing it allocated %d bytes", n)
		}
	}
}

// TestValuesCountAsRead: a dataset's values count against the budget at the 8
// bytes each takes once read, not their size in the file: a file of bytes
// cannot make its reader allocate eight times its budget.
func TestValuesCountAsRead(t *testing.T) {
	f := openFixture(t, "sb0.h5")
	d, err := f.Dataset("types/u8")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Uint64s(0); err != nil {
		t.Fatal(err)
	}
	if d.ElementSize() != 1 || f.spent() != 8*d.Len() {
		t.Errorf("%d values of %d bytes: %d bytes spent, want %d", d.Len(), d.ElementSize(), f.spent(), 8*d.Len())
	}
}

// TestChunkShapeOverflowIsRefused: a chunk shape whose size in bytes overflows
// 64 bits (2^31 × 2^31 doubles: 2^34 bytes a row, within the budget of a file
// of 128 MB) is refused, not wrapped to 0 bytes: the empty chunk stored for it
// was placed with the shape's strides and panicked, slicing past its end.
func TestChunkShapeOverflowIsRefused(t *testing.T) {
	f := &File{r: strings.NewReader(""), size: 1 << 30}
	d := &Dataset{f: f, path: "/x", shape: []uint64{2, 2}, maxShape: []uint64{2, 2}, n: 4, class: FloatingPoint, size: 8,
		layout: layoutChunked, chunk: []uint64{1 << 31, 1 << 31}, index: indexSingle, dataAddr: 8}
	if _, err := d.Float64s(0); !errors.Is(err, expansion.ErrBomb) {
		t.Fatalf("Float64s: %v, want expansion.ErrBomb", err)
	}
}
