package testutil

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	"github.com/partopt/partopt/internal/hdf5"
)

// TestLookup3MatchesLibhdf5: the checksums of the superblock and of every
// version 2 object header of a file libhdf5 wrote are lookup3's.
func TestLookup3MatchesLibhdf5(t *testing.T) {
	data, err := os.ReadFile("../hdf5/testdata/sb2.h5")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := lookup3(data[:44]), binary.LittleEndian.Uint32(data[44:]); got != want {
		t.Fatalf("superblock: lookup3 %08x, stored %08x", got, want)
	}
	headers := 0
	for at := 0; ; at++ {
		i := bytes.Index(data[at:], []byte("OHDR\x02"))
		if i < 0 {
			break
		}
		at += i
		flags := data[at+5]
		n := 6
		if flags&0x20 != 0 {
			n += 16
		}
		if flags&0x10 != 0 {
			n += 4
		}
		size := 0
		for j := range 1 << (flags & 3) {
			size |= int(data[at+n+j]) << (8 * j)
		}
		end := at + n + 1<<(flags&3) + size
		if got, want := lookup3(data[at:end]), binary.LittleEndian.Uint32(data[end:]); got != want {
			t.Errorf("object header at %#x: lookup3 %08x, stored %08x", at, got, want)
		}
		headers++
	}
	if headers < 10 {
		t.Fatalf("%d object headers checked", headers)
	}
}

// TestOpenGMTableBombReads: package hdf5 reads a small such file, its values
// all zeros and as many as the shape says.
func TestOpenGMTableBombReads(t *testing.T) {
	data := OpenGMTableBomb(8, 64)
	f, err := hdf5.Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]uint64{
		"gm/header": {2, 0, 2, 1, 1, 16000, 1, 1}, "gm/numbers-of-states": {8, 64},
		"gm/factors": {0, 0, 2, 0, 1}, "gm/function-id-16000/indices": {2, 8, 64},
	} {
		d, err := f.Dataset(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.Uint64s(0)
		if err != nil || !bytes.Equal(le64(got...), le64(want...)) {
			t.Errorf("%s: %v, %v; want %v", path, got, err, want)
		}
	}
	d, err := f.Dataset("gm/function-id-16000/values")
	if err != nil {
		t.Fatal(err)
	}
	v, err := d.Float64s(0)
	if err != nil || len(v) != 8*64 || v[0] != 0 || v[len(v)-1] != 0 {
		t.Fatalf("values: %d of them, %v", len(v), err)
	}
}
