package hdf5

import (
	"fmt"
	"math/bits"
)

// Class is an HDF5 datatype class; the values are the file format's.
type Class int

// Datatype classes. Only FixedPoint and FloatingPoint datasets can be read.
const (
	FixedPoint    Class = 0
	FloatingPoint Class = 1
	Time          Class = 2
	String        Class = 3
	BitField      Class = 4
	Opaque        Class = 5
	Compound      Class = 6
	Reference     Class = 7
	Enum          Class = 8
	VarLen        Class = 9
	Array         Class = 10
)

var classNames = [...]string{"fixed-point", "floating-point", "time", "string", "bit field",
	"opaque", "compound", "reference", "enumerated", "variable-length", "array"}

func (c Class) String() string {
	if c >= 0 && int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("class %d", int(c))
}

// maxRank bounds the number of dimensions (libhdf5's H5S_MAX_RANK).
const maxRank = 32

// Layout classes.
const (
	layoutCompact    = 0
	layoutContiguous = 1
	layoutChunked    = 2
)

// Filter identifiers.
const (
	filterDeflate    = 1
	filterShuffle    = 2
	filterFletcher32 = 3
)

// Dataset is a dataset's metadata: its shape, element type and storage. Reading
// the values (Uint64s, Int64s, Float64s) reads the file again.
type Dataset struct {
	f    *File
	path string
	addr uint64 // object header

	shape    []uint64
	maxShape []uint64 // maximum dimensions (^0: unlimited)
	n        uint64   // number of elements

	class     Class
	size      int // element size in bytes
	bigEndian bool
	signed    bool
	typeErr   error // why the datatype cannot be read, or nil

	layout   int
	dataAddr uint64   // contiguous data or chunk B-tree
	dataSize uint64   // contiguous size in bytes
	compact  []byte   // compact data
	chunk    []uint64 // chunk shape (rank entries)
	index    int      // chunk index type (indexBTree1, …)
	single   struct {
		size uint64 // filtered size of a single chunk
		mask uint32
	}
	pageBits  int  // fixed array: log2 of the entries per data block page
	rawEdges  bool // partial edge chunks are stored unfiltered
	filters   []filter
	fill      []byte // fill value of one element, nil for zeros
	layoutErr error  // why the storage cannot be read, or nil
}

type filter struct {
	id     uint16
	flags  uint16
	name   string
	client []uint32
}

// Dataset finds the dataset at a slash-separated path from the root, such as
// "gm/header", and reads its metadata. A dataset of an unsupported type, layout or
// filter is returned; reading its values reports ErrUnsupported.
func (f *File) Dataset(path string) (*Dataset, error) {
	addr, err := f.resolve(path)
	if err != nil {
		return nil, err
	}
	p := displayPath(path)
	h, err := f.objectHeader(addr, p)
	if err != nil {
		return nil, fmt.Errorf("hdf5: %w", err)
	}
	d, err := f.decodeDataset(h, p)
	if err != nil {
		return nil, fmt.Errorf("hdf5: %s: %w", p, err)
	}
	return d, nil
}

// Path returns the dataset's path as given to File.Dataset, with a leading slash.
func (d *Dataset) Path() string { return d.path }

// Shape returns the dataset's dimensions; a scalar has none.
func (d *Dataset) Shape() []uint64 { return append([]uint64(nil), d.shape...) }

// Len returns the number of elements: the product of the dimensions.
func (d *Dataset) Len() uint64 { return d.n }

// Class returns the class of the element type.
func (d *Dataset) Class() Class { return d.class }

// ElementSize returns the size of one element in the file, in bytes.
func (d *Dataset) ElementSize() int { return d.size }

// Signed reports whether a FixedPoint element type is signed.
func (d *Dataset) Signed() bool { return d.signed }

func (f *File) decodeDataset(h *objectHeader, path string) (*Dataset, error) {
	if err := checkUnknown(h); err != nil {
		return nil, err
	}
	ds := &Dataset{f: f, path: path, addr: h.addr}
	space, typ, lay := h.first(msgDataspace), h.first(msgDatatype), h.first(msgLayout)
	if space == nil || typ == nil || lay == nil {
		if isGroup(h) {
			return nil, fmt.Errorf("object header at offset %#x is a group, not a dataset: %w", h.addr, ErrNotFound)
		}
		return nil, formatErr("object header at offset %#x: not a dataset (no dataspace, datatype or layout message)", h.addr)
	}
	for _, m := range []*message{space, typ, lay} {
		if err := checkShared(m, "dataspace, datatype or layout"); err != nil {
			return nil, err
		}
	}
	if err := f.decodeDataspace(ds, space); err != nil {
		return nil, err
	}
	if err := f.decodeDatatype(ds, typ); err != nil {
		return nil, err
	}
	if err := f.decodeLayout(ds, lay); err != nil {
		return nil, err
	}
	if m := h.first(msgFilters); m != nil {
		if err := checkShared(m, "filter pipeline"); err != nil {
			return nil, err
		}
		if err := f.decodeFilters(ds, m); err != nil {
			return nil, err
		}
	}
	if m := h.first(msgFill); m != nil {
		if err := checkShared(m, "fill value"); err != nil {
			return nil, err
		}
		if err := f.decodeFill(ds, m); err != nil {
			return nil, err
		}
	} else if m := h.first(msgFillOld); m != nil {
		dd := f.decoder(m.data, m.at, "fill value message")
		n := dd.u32()
		if dd.err == nil && int64(n) == int64(ds.size) && n > 0 {
			ds.fill = dd.take(int(n))
		}
	}
	if h.first(msgExternal) != nil && ds.layoutErr == nil {
		ds.layoutErr = unsupportedErr("external data files")
	}
	if ds.layout == layoutChunked && ds.layoutErr == nil {
		if len(ds.chunk) != len(ds.shape) {
			return nil, formatErr("layout message at offset %#x: chunk rank %d, dataspace rank %d", lay.at, len(ds.chunk), len(ds.shape))
		}
	}
	return ds, nil
}

func (f *File) decodeDataspace(ds *Dataset, m *message) error {
	d := f.decoder(m.data, m.at, "dataspace message")
	version := d.u8()
	rank := int(d.u8())
	flags := d.u8()
	null := false
	switch version {
	case 1:
		d.skip(5)
	case 2:
		switch t := d.u8(); t {
		case 0, 1:
		case 2:
			null = true
		default:
			d.fail("dataspace type %d", t)
		}
	default:
		if d.err == nil {
			return unsupportedErr("dataspace message at offset %#x: version %d", m.at, version)
		}
	}
	if rank > maxRank {
		d.fail("rank %d exceeds %d", rank, maxRank)
	}
	if d.err != nil {
		return d.err
	}
	ds.shape = make([]uint64, rank)
	n := uint64(1)
	overflow := false
	for i := range ds.shape {
		ds.shape[i] = d.length()
		hi, lo := bits.Mul64(n, ds.shape[i])
		overflow = overflow || hi != 0
		n = lo
	}
	ds.maxShape = ds.shape
	if flags&1 != 0 {
		ds.maxShape = make([]uint64, rank)
		for i := range ds.maxShape {
			ds.maxShape[i] = d.length()
		}
	}
	if d.err != nil {
		return d.err
	}
	if overflow {
		return formatErr("dataspace message at offset %#x: element count overflows", m.at)
	}
	if null {
		n = 0
	}
	ds.n = n
	return nil
}

func (f *File) decodeDatatype(ds *Dataset, m *message) error {
	d := f.decoder(m.data, m.at, "datatype message")
	cv := d.u8()
	b0, b1, _ := d.u8(), d.u8(), d.u8()
	size := d.u32()
	if d.err != nil {
		return d.err
	}
	ds.class = Class(cv & 0x0f)
	version := cv >> 4
	if version < 1 || version > 4 {
		return formatErr("datatype message at offset %#x: version %d", m.at, version)
	}
	if size == 0 || size > 1<<20 {
		return formatErr("datatype message at offset %#x: element size %d", m.at, size)
	}
	ds.size = int(size)
	switch ds.class {
	case FixedPoint:
		ds.bigEndian = b0&1 != 0
		ds.signed = b0&0x08 != 0
		off, prec := d.u16(), d.u16()
		if d.err != nil {
			return d.err
		}
		if size != 1 && size != 2 && size != 4 && size != 8 {
			ds.typeErr = unsupportedErr("%d-byte integers", size)
		} else if off != 0 || uint32(prec) != 8*size {
			ds.typeErr = unsupportedErr("integer with bit offset %d and precision %d", off, prec)
		}
	case FloatingPoint:
		order := b0&1 | (b0>>5)&2
		ds.bigEndian = order == 1
		sign := b1
		off, prec := d.u16(), d.u16()
		eloc, esize, mloc, msize := d.u8(), d.u8(), d.u8(), d.u8()
		bias := d.u32()
		if d.err != nil {
			return d.err
		}
		ieee := off == 0 && uint32(prec) == 8*size && mloc == 0 &&
			(size == 4 && sign == 31 && eloc == 23 && esize == 8 && msize == 23 && bias == 127 ||
				size == 8 && sign == 63 && eloc == 52 && esize == 11 && msize == 52 && bias == 1023)
		switch {
		case order > 1:
			ds.typeErr = unsupportedErr("floating-point byte order %d (VAX)", order)
		case !ieee:
			ds.typeErr = unsupportedErr("%d-byte non-IEEE floating-point type", size)
		}
	default:
		ds.typeErr = unsupportedErr("%s datatype", ds.class)
	}
	return nil
}

func (f *File) decodeLayout(ds *Dataset, m *message) error {
	d := f.decoder(m.data, m.at, "layout message")
	version := d.u8()
	if d.err != nil {
		return d.err
	}
	switch version {
	case 1, 2:
		ndims := int(d.u8())
		ds.layout = int(d.u8())
		d.skip(5)
		if ds.layout != layoutCompact {
			ds.dataAddr = d.addr()
		}
		if ndims < 1 || ndims > maxRank+1 {
			d.fail("dimensionality %d", ndims)
		}
		if d.err != nil {
			return d.err
		}
		dims := make([]uint64, ndims)
		for i := range dims {
			dims[i] = uint64(d.u32())
		}
		switch ds.layout {
		case layoutCompact:
			n := d.u32()
			ds.compact = d.take(int(min(n, 1<<31)))
		case layoutContiguous:
			ds.dataSize = uint64(ds.size)
			for _, x := range dims {
				ds.dataSize *= x // checked against the dataset size when read
			}
		case layoutChunked:
			return ds.setChunk(dims, m.at)
		default:
			d.fail("layout class %d", ds.layout)
		}
		return d.err
	case 3, 4:
		ds.layout = int(d.u8())
		switch ds.layout {
		case layoutCompact:
			n := d.u16()
			ds.compact = d.take(int(n))
		case layoutContiguous:
			ds.dataAddr = d.addr()
			ds.dataSize = d.length()
		case layoutChunked:
			if version == 4 {
				return f.decodeLayout4(ds, d, m)
			}
			ndims := int(d.u8())
			ds.dataAddr = d.addr()
			if ndims < 2 || ndims > maxRank+1 {
				d.fail("chunk dimensionality %d", ndims)
			}
			if d.err != nil {
				return d.err
			}
			dims := make([]uint64, ndims)
			for i := range dims {
				dims[i] = uint64(d.u32())
			}
			if d.err != nil {
				return d.err
			}
			return ds.setChunk(dims, m.at)
		case 3:
			ds.layoutErr = unsupportedErr("virtual dataset layout")
			return nil
		default:
			d.fail("layout class %d", ds.layout)
		}
		return d.err
	default:
		return unsupportedErr("layout message at offset %#x: version %d", m.at, version)
	}
}

// Chunk index types. Version 1 B-trees index the chunks of layout messages
// 1–3; the others are layout message version 4's.
const (
	indexBTree1     = 0
	indexSingle     = 1
	indexImplicit   = 2
	indexFixedArray = 3
	indexExtArray   = 4
	indexBTree2     = 5
)

// decodeLayout4 decodes the chunked storage of a version 4 layout message; d is
// past the layout class.
func (f *File) decodeLayout4(ds *Dataset, d *decoder, m *message) error {
	flags := d.u8()
	ndims := int(d.u8())
	enc := int(d.u8())
	if d.err == nil && (ndims < 2 || ndims > maxRank+1 || enc < 1 || enc > 8) {
		d.fail("chunk dimensionality %d, %d bytes per dimension", ndims, enc)
	}
	if d.err != nil {
		return d.err
	}
	dims := make([]uint64, ndims)
	for i := range dims {
		dims[i] = d.uint(enc)
	}
	ds.rawEdges = flags&1 != 0
	ds.index = int(d.u8())
	switch ds.index {
	case indexSingle:
		if flags&2 != 0 {
			ds.single.size = d.length()
			ds.single.mask = d.u32()
		}
	case indexImplicit:
	case indexFixedArray:
		ds.pageBits = int(d.u8())
	case indexExtArray:
		d.skip(5)
		ds.layoutErr = unsupportedErr("extensible array chunk index (dataset with an unlimited dimension, layout message version 4)")
	case indexBTree2:
		d.skip(6)
		ds.layoutErr = unsupportedErr("version 2 B-tree chunk index (layout message version 4)")
	default:
		d.fail("chunk index type %d", ds.index)
	}
	ds.dataAddr = d.addr()
	if d.err != nil {
		return d.err
	}
	if dims[ndims-1] > 1<<20 {
		return formatErr("layout message at offset %#x: chunk element size %d", m.at, dims[ndims-1])
	}
	for _, x := range dims[:ndims-1] {
		if x > 1<<32 {
			return formatErr("layout message at offset %#x: chunk dimension %d", m.at, x)
		}
	}
	return ds.setChunk(dims, m.at)
}

// setChunk records the chunk shape from the layout's dimensions, whose last entry
// is the element size.
func (ds *Dataset) setChunk(dims []uint64, at uint64) error {
	r := len(dims) - 1
	if r < 1 {
		return formatErr("layout message at offset %#x: chunked layout of rank %d", at, r)
	}
	if dims[r] != uint64(ds.size) {
		return formatErr("layout message at offset %#x: chunk element size %d, datatype size %d", at, dims[r], ds.size)
	}
	for _, x := range dims[:r] {
		if x == 0 {
			return formatErr("layout message at offset %#x: chunk dimension 0", at)
		}
	}
	ds.chunk = dims[:r]
	return nil
}

func (f *File) decodeFilters(ds *Dataset, m *message) error {
	d := f.decoder(m.data, m.at, "filter pipeline message")
	version := d.u8()
	n := int(d.u8())
	switch version {
	case 1:
		d.skip(6)
	case 2:
	default:
		if d.err == nil {
			return unsupportedErr("filter pipeline message at offset %#x: version %d", m.at, version)
		}
	}
	if n > 32 {
		d.fail("%d filters", n)
	}
	for range n {
		var fl filter
		fl.id = d.u16()
		nameLen := 0
		if version == 1 || fl.id >= 256 {
			nameLen = int(d.u16())
		}
		fl.flags = d.u16()
		nc := int(d.u16())
		if nameLen > 0 {
			if version == 1 {
				nameLen = (nameLen + 7) &^ 7
			}
			name := d.take(nameLen)
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			fl.name = string(name)
		}
		if nc > d.remaining()/4 {
			d.fail("%d filter parameters", nc)
		}
		if d.err != nil {
			return d.err
		}
		fl.client = make([]uint32, nc)
		for i := range fl.client {
			fl.client[i] = d.u32()
		}
		if version == 1 && nc%2 == 1 {
			d.skip(4)
		}
		if d.err != nil {
			return d.err
		}
		ds.filters = append(ds.filters, fl)
		switch fl.id {
		case filterDeflate, filterShuffle, filterFletcher32:
		default:
			if ds.layoutErr == nil {
				name := fl.name
				if name == "" {
					name = map[uint16]string{4: "szip", 5: "nbit", 6: "scaleoffset"}[fl.id]
				}
				ds.layoutErr = unsupportedErr("filter %d (%s)", fl.id, name)
			}
		}
	}
	if len(ds.filters) > 0 && ds.layout != layoutChunked && ds.layoutErr == nil {
		return formatErr("filter pipeline message at offset %#x on a dataset that is not chunked", m.at)
	}
	return nil
}

func (f *File) decodeFill(ds *Dataset, m *message) error {
	d := f.decoder(m.data, m.at, "fill value message")
	version := d.u8()
	var n uint32
	has := false
	switch version {
	case 1, 2:
		d.u8() // space allocation time
		d.u8() // fill value write time
		defined := d.u8()
		has = version == 1 || defined != 0
	case 3:
		flags := d.u8()
		has = flags&0x20 != 0
	default:
		if d.err == nil {
			return unsupportedErr("fill value message at offset %#x: version %d", m.at, version)
		}
	}
	if has {
		n = d.u32()
		if d.err == nil && n > 0 {
			v := d.take(int(min(n, 1<<31)))
			if d.err == nil && int(n) == ds.size {
				ds.fill = v
			}
		}
	}
	return d.err
}
