package labelfile

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// lockStripes is the number of tile-row locks of a writable File.
const lockStripes = 64

// File is a label raster on disk. A File from Create is readable and writable and
// becomes a valid file on Close; a File from Open is read-only and checks every tile
// it reads. ReadRect and WriteRect may be called from many goroutines at once; Close
// must not run concurrently with them.
type File struct {
	name     string
	f        *os.File
	h        Header
	bpv      int
	max      uint32
	writable bool // else opened: reads check tiles against the index
	// rowLocks serialise WriteRect's runs per tile row (stripe ty mod lockStripes):
	// a writer that reads, patches and writes back partly covered tiles must not
	// write stale bytes over the pixels a concurrent writer just stored.
	rowLocks [lockStripes]sync.Mutex
	closed   atomic.Bool
}

func newFile(name string, osf *os.File, h Header, writable bool) *File {
	return &File{name: name, f: osf, h: h, bpv: h.BytesPerValue(), max: uint32(h.MaxValue()), writable: writable}
}

// Create creates the file path (truncating an existing one) for the header's raster,
// every value 0, open for reading and writing. The file is sparse: it is extended to
// its full size, not filled with zeros. Until Close it is unfinished, and Open
// refuses it.
func Create(path string, h Header) (*File, error) {
	if err := h.normalise(); err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	osf, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*File, error) {
		osf.Close()
		os.Remove(path)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := osf.Truncate(h.fileSize()); err != nil {
		return fail(err)
	}
	// Index offset 0 marks the file unfinished until Close rewrites the header.
	fx := fixed{h: h, nTiles: uint64(h.numTiles())}
	if _, err := osf.WriteAt(fx.encode(), 0); err != nil {
		return fail(err)
	}
	return newFile(path, osf, h, true), nil
}

// Open opens a finished file read-only. It checks the header (checksum, every field),
// that the file has exactly the size the header implies, and the tile index checksum
// (reading the index a megabyte at a time); it allocates nothing by a declared count.
// Tiles are checked as they are read, against the index.
func Open(path string) (*File, error) {
	osf, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	f, err := open(osf, path)
	if err != nil {
		osf.Close()
		return nil, err
	}
	return f, nil
}

func open(osf *os.File, name string) (*File, error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w: %s", name, ErrCorrupt, fmt.Sprintf(format, args...))
	}
	st, err := osf.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size < HeaderSize {
		return nil, corrupt("truncated: %d bytes, shorter than the %d-byte header", size, HeaderSize)
	}
	b := make([]byte, HeaderSize)
	if _, err := osf.ReadAt(b, 0); err != nil {
		return nil, fmt.Errorf("%s: reading the header: %w", name, err)
	}
	fx, err := decodeHeader(b)
	if err != nil {
		return nil, corrupt("%v", err)
	}
	h := fx.h
	if fx.indexOff == 0 {
		return nil, corrupt("unfinished file (created but never closed)")
	}
	if want := h.indexOff(); fx.indexOff != uint64(want) {
		return nil, corrupt("index offset %d, want %d", fx.indexOff, want)
	}
	if want := h.fileSize(); size != want {
		if size < want {
			return nil, corrupt("truncated: %d bytes, want %d", size, want)
		}
		return nil, corrupt("%d bytes, want %d (trailing data)", size, want)
	}
	// The index is checksummed a megabyte at a time and not held: the file's
	// length backs its size, but a sparse file backs it with a hole (tiles of
	// 1×1 pixels declare 4 bytes of index a pixel). Reads fetch the checksums
	// of the tiles they read.
	hash := crc32.New(castagnoli)
	n := 4 * h.numTiles()
	got, err := io.CopyBuffer(hash, io.NewSectionReader(osf, h.indexOff(), n), make([]byte, min(n, 1<<20)))
	if err == nil && got < n {
		err = io.ErrUnexpectedEOF // shortened since the size was checked
	}
	if err != nil {
		return nil, fmt.Errorf("%s: reading the tile index: %w", name, err)
	}
	if got := hash.Sum32(); got != fx.indexCRC {
		return nil, corrupt("tile index checksum mismatch (CRC32C %08x, stored %08x)", got, fx.indexCRC)
	}
	return newFile(name, osf, h, false), nil
}

// Header returns the raster's header, with the default tile size filled in.
func (f *File) Header() Header { return f.h }

// Name is the file name used in errors.
func (f *File) Name() string { return f.name }

// Close closes the file. On a File from Create it first completes the file: it
// computes the CRC32C of every tile (reading the data once, in chunks of about a
// megabyte), writes the tile index, syncs, then writes the final header and syncs
// again, so a crash at any point leaves a file that Open reports as unfinished or a
// complete one. The file is closed even when completing it fails.
func (f *File) Close() error {
	if !f.closed.CompareAndSwap(false, true) {
		return fmt.Errorf("%s: %w", f.name, os.ErrClosed)
	}
	var err error
	if f.writable {
		err = f.finish()
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (f *File) finish() error {
	h := f.h
	iw := bufio.NewWriterSize(io.NewOffsetWriter(f.f, h.indexOff()), 64<<10)
	var icrc uint32
	var e [4]byte
	err := f.runs(0, 0, h.Width, h.Height, func(r run) error {
		bp := getBuf(r.bytes())
		defer bufPool.Put(bp)
		b := *bp
		if err := f.readRun(b, r.off); err != nil {
			return err
		}
		for tx := r.tx0; tx <= r.tx1; tx++ {
			lo, _, tw := r.tile(tx)
			binary.LittleEndian.PutUint32(e[:], crc32.Checksum(b[lo:lo+tw*r.rows()*f.bpv], castagnoli))
			icrc = crc32.Update(icrc, castagnoli, e[:])
			if _, err := iw.Write(e[:]); err != nil {
				return fmt.Errorf("%s: writing the tile index: %w", f.name, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := iw.Flush(); err != nil {
		return fmt.Errorf("%s: writing the tile index: %w", f.name, err)
	}
	// The index must be on disk before the header that declares it.
	if err := f.f.Sync(); err != nil {
		return fmt.Errorf("%s: %w", f.name, err)
	}
	fx := fixed{h: h, nTiles: uint64(h.numTiles()), indexOff: uint64(h.indexOff()), indexCRC: icrc}
	if _, err := f.f.WriteAt(fx.encode(), 0); err != nil {
		return fmt.Errorf("%s: writing the header: %w", f.name, err)
	}
	if err := f.f.Sync(); err != nil {
		return fmt.Errorf("%s: %w", f.name, err)
	}
	return nil
}
