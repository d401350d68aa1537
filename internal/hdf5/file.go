package hdf5

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
)

// signature opens every HDF5 superblock.
var signature = []byte("\x89HDF\r\n\x1a\n")

// File is an open HDF5 file. Its methods may be called from several goroutines at
// once if the io.ReaderAt allows it (an *os.File does).
type File struct {
	r       io.ReaderAt
	size    int64
	closer  io.Closer
	name    string // for error messages; "" for Open
	base    uint64 // absolute offset that addresses are relative to
	offSize int    // size of offsets in bytes
	lenSize int    // size of lengths in bytes
	version int    // superblock version
	root    uint64 // object header address of the root group

	mu     sync.Mutex
	groups map[uint64][]link // members of the groups read so far, by object header address
	// decoded is the element data of the datasets read so far, in bytes: all
	// of them together stay within MaxExpansion × the file size.
	decoded uint64
}

// Open reads the superblock and root group of an HDF5 file of the given size read
// through r. The superblock is looked for at offset 0 and then at 512, 1024, 2048, …
// (files with a user block).
func Open(r io.ReaderAt, size int64) (*File, error) {
	f := &File{r: r, size: size}
	if err := f.readSuperblock(); err != nil {
		return nil, err
	}
	if _, err := f.objectHeader(f.root, "/"); err != nil {
		return nil, fmt.Errorf("hdf5: root group: %w", err)
	}
	return f, nil
}

// OpenFile opens the HDF5 file at path. Close closes it.
func OpenFile(path string) (*File, error) {
	osf, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := osf.Stat()
	if err != nil {
		osf.Close()
		return nil, err
	}
	f, err := Open(osf, st.Size())
	if err != nil {
		osf.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.closer = osf
	f.name = path
	return f, nil
}

// Close closes the file opened by OpenFile; for a File from Open it does nothing.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	c := f.closer
	f.closer = nil
	return c.Close()
}

// SuperblockVersion returns the version of the file's superblock (0–3).
func (f *File) SuperblockVersion() int { return f.version }

// readSuperblock finds and decodes the superblock (versions 0–3).
func (f *File) readSuperblock() error {
	if f.size < 0 {
		return formatErr("hdf5: negative file size %d", f.size)
	}
	var at int64 = -1
	sig := make([]byte, len(signature))
	for off := int64(0); off+int64(len(signature)) <= f.size; off = nextSuperblockOffset(off) {
		if err := readFull(f.r, sig, off); err != nil {
			return formatErr("hdf5: reading signature at offset %d: %v", off, err)
		}
		if bytes.Equal(sig, signature) {
			at = off
			break
		}
	}
	if at < 0 {
		return formatErr("hdf5: no HDF5 signature found")
	}
	// The largest superblock (version 1 with 8-byte fields) is under 128 bytes,
	// plus the root symbol table entry.
	n := min(f.size-at, 256)
	b := make([]byte, n)
	if err := readFull(f.r, b, at); err != nil {
		return formatErr("hdf5: reading superblock at offset %d: %v", at, err)
	}
	if len(b) < 16 {
		return formatErr("hdf5: superblock at offset %d: truncated", at)
	}
	f.version = int(b[8])
	var d *decoder
	switch f.version {
	case 0, 1:
		// signature, version, free-space version, root group symbol table entry
		// version, reserved, shared header message format version, size of
		// offsets, size of lengths, reserved.
		f.offSize, f.lenSize = int(b[13]), int(b[14])
		if err := f.checkSizes(at); err != nil {
			return err
		}
		d = f.decoder(b, uint64(at), "superblock")
		d.skip(16)
		d.u16() // group leaf node K
		d.u16() // group internal node K
		d.u32() // file consistency flags
		if f.version == 1 {
			d.u16() // indexed storage internal node K
			d.u16() // reserved
		}
		f.base = d.addr()
		d.addr() // free-space info address
		eof := d.addr()
		d.addr() // driver information block address
		// Root group symbol table entry: link name offset, object header address,
		// cache type, reserved, scratch pad.
		d.addr()
		f.root = d.addr()
		if d.err != nil {
			return fmt.Errorf("hdf5: %w", d.err)
		}
		if err := f.checkEOF(at, eof); err != nil {
			return err
		}
	case 2, 3:
		f.offSize, f.lenSize = int(b[9]), int(b[10])
		if err := f.checkSizes(at); err != nil {
			return err
		}
		d = f.decoder(b, uint64(at), "superblock")
		d.skip(12) // signature, version, sizes, file consistency flags
		f.base = d.addr()
		d.addr() // superblock extension address
		eof := d.addr()
		f.root = d.addr()
		if d.err != nil {
			return fmt.Errorf("hdf5: %w", d.err)
		}
		if err := f.checkEOF(at, eof); err != nil {
			return err
		}
	default:
		return unsupportedErr("hdf5: superblock version %d at offset %d", f.version, at)
	}
	if f.root == undefined {
		return formatErr("hdf5: superblock at offset %d: undefined root group address", at)
	}
	return nil
}

// nextSuperblockOffset returns the next place a superblock may start: 0, 512, 1024, …
func nextSuperblockOffset(off int64) int64 {
	if off == 0 {
		return 512
	}
	return off * 2
}

func (f *File) checkSizes(at int64) error {
	for _, s := range []int{f.offSize, f.lenSize} {
		if s != 2 && s != 4 && s != 8 {
			return formatErr("hdf5: superblock at offset %d: field size %d, want 2, 4 or 8", at, s)
		}
	}
	return nil
}

// checkEOF checks the base address and that the file is not shorter than the end
// of file address recorded in the superblock.
func (f *File) checkEOF(at int64, eof uint64) error {
	if f.base == undefined || f.base > uint64(f.size) {
		return formatErr("hdf5: superblock at offset %d: base address %#x outside the file", at, f.base)
	}
	// libhdf5 records the end of file address counting the user block, although
	// other addresses are relative to the base address.
	if eof == undefined || eof > uint64(f.size) {
		return formatErr("hdf5: superblock at offset %d: end of file address %#x past the file's %d bytes (truncated file?)", at, eof, f.size)
	}
	return nil
}
