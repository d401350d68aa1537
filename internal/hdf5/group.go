package hdf5

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// maxBTreeDepth bounds the level of a version 1 B-tree root; libhdf5's trees are
// a few levels deep.
const maxBTreeDepth = 64

// Link types of link messages.
const (
	linkHard     = 0
	linkSoft     = 1
	linkExternal = 64
)

// link is one member of a group.
type link struct {
	name string
	kind int    // linkHard, linkSoft, linkExternal or another user-defined type
	addr uint64 // object header address of a hard link
}

// List returns the names of the members of a group, sorted. The group is named by
// a slash-separated path from the root; "" or "/" is the root.
func (f *File) List(group string) ([]string, error) {
	addr, err := f.resolve(group)
	if err != nil {
		return nil, err
	}
	links, err := f.groupLinks(addr, displayPath(group))
	if err != nil {
		return nil, err
	}
	names := make([]string, len(links))
	for i, l := range links {
		names[i] = l.name
	}
	slices.Sort(names)
	return names, nil
}

// IsGroup reports whether path names a group (false for a dataset or another
// object).
func (f *File) IsGroup(path string) (bool, error) {
	addr, err := f.resolve(path)
	if err != nil {
		return false, err
	}
	h, err := f.objectHeader(addr, displayPath(path))
	if err != nil {
		return false, fmt.Errorf("hdf5: %w", err)
	}
	return isGroup(h), nil
}

// isGroup reports whether an object header has a group's messages.
func isGroup(h *objectHeader) bool {
	return h.first(msgSymbolTable) != nil || h.first(msgLinkInfo) != nil ||
		h.first(msgLink) != nil || h.first(msgGroupInfo) != nil
}

func displayPath(p string) string {
	p = strings.Trim(p, "/")
	return "/" + p
}

// resolve returns the object header address of the object at path.
func (f *File) resolve(path string) (uint64, error) {
	addr := f.root
	cur := ""
	for _, name := range strings.Split(path, "/") {
		if name == "" {
			continue
		}
		links, err := f.groupLinks(addr, displayPath(cur))
		if err != nil {
			return 0, err
		}
		cur += "/" + name
		i := slices.IndexFunc(links, func(l link) bool { return l.name == name })
		if i < 0 {
			return 0, fmt.Errorf("hdf5: %s: %w", displayPath(cur), ErrNotFound)
		}
		switch l := links[i]; l.kind {
		case linkHard:
			addr = l.addr
		case linkSoft:
			return 0, unsupportedErr("hdf5: %s: soft link", displayPath(cur))
		case linkExternal:
			return 0, unsupportedErr("hdf5: %s: external link", displayPath(cur))
		default:
			return 0, unsupportedErr("hdf5: %s: user-defined link type %d", displayPath(cur), l.kind)
		}
	}
	return addr, nil
}

// groupLinks returns the members of the group at addr, reading them once.
func (f *File) groupLinks(addr uint64, path string) ([]link, error) {
	f.mu.Lock()
	ls, ok := f.groups[addr]
	f.mu.Unlock()
	if ok {
		return ls, nil
	}
	h, err := f.objectHeader(addr, path)
	if err != nil {
		return nil, fmt.Errorf("hdf5: %w", err)
	}
	ls, err = f.links(h, path)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	if f.groups == nil {
		f.groups = map[uint64][]link{}
	}
	f.groups[addr] = ls
	f.mu.Unlock()
	return ls, nil
}

// links returns the members of the group whose object header is h: from its
// symbol table message (old-style group) or its link messages (new-style).
func (f *File) links(h *objectHeader, path string) ([]link, error) {
	if err := checkUnknown(h); err != nil {
		return nil, fmt.Errorf("hdf5: %s: %w", path, err)
	}
	if m := h.first(msgSymbolTable); m != nil {
		d := f.decoder(m.data, m.at, "symbol table message")
		btree, heap := d.addr(), d.addr()
		if d.err != nil {
			return nil, fmt.Errorf("hdf5: %s: %w", path, d.err)
		}
		ls, err := f.symbolTable(btree, heap)
		if err != nil {
			return nil, fmt.Errorf("hdf5: %s: %w", path, err)
		}
		return ls, nil
	}
	var ls []link
	isGroup := false
	for i := range h.msgs {
		m := &h.msgs[i]
		switch m.typ {
		case msgLinkInfo:
			isGroup = true
			heap, index, err := f.decodeLinkInfo(m)
			if err != nil {
				return nil, fmt.Errorf("hdf5: %s: %w", path, err)
			}
			if heap != undefined {
				dense, err := f.denseLinks(heap, index)
				if err != nil {
					return nil, fmt.Errorf("hdf5: %s: dense link storage: %w", path, err)
				}
				ls = append(ls, dense...)
			}
		case msgGroupInfo:
			isGroup = true
		case msgLink:
			isGroup = true
			l, err := f.decodeLink(m.data, m.at)
			if err != nil {
				return nil, fmt.Errorf("hdf5: %s: %w", path, err)
			}
			ls = append(ls, l)
		}
	}
	if !isGroup {
		return nil, fmt.Errorf("hdf5: %s (object header at offset %#x) is not a group: %w", path, h.addr, ErrNotFound)
	}
	return ls, nil
}

// decodeLinkInfo returns the fractal heap and name index B-tree addresses of
// a group's dense link storage (undefined for compact storage).
func (f *File) decodeLinkInfo(m *message) (heap, index uint64, err error) {
	d := f.decoder(m.data, m.at, "link info message")
	if v := d.u8(); v != 0 && d.err == nil {
		return 0, 0, unsupportedErr("link info message at offset %#x: version %d", m.at, v)
	}
	flags := d.u8()
	if flags&1 != 0 {
		d.skip(8) // maximum creation index
	}
	heap = d.addr()
	index = d.addr()
	return heap, index, d.err
}

// decodeLink decodes a link message (version 1) found at offset at.
func (f *File) decodeLink(data []byte, at uint64) (link, error) {
	d := f.decoder(data, at, "link message")
	var l link
	if v := d.u8(); v != 1 && d.err == nil {
		return l, unsupportedErr("link message at offset %#x: version %d", at, v)
	}
	flags := d.u8()
	if flags&0x08 != 0 {
		l.kind = int(d.u8())
	}
	if flags&0x04 != 0 {
		d.skip(8) // creation order
	}
	if flags&0x10 != 0 {
		d.u8() // character set
	}
	n := d.uint(1 << (flags & 3))
	if d.err == nil && (n == 0 || n > uint64(d.remaining())) {
		d.fail("link name length %d", n)
	}
	name := d.take(int(n))
	l.name = string(name)
	switch l.kind {
	case linkHard:
		l.addr = d.addr()
	}
	if d.err != nil {
		return l, d.err
	}
	if err := checkName(l.name, at); err != nil {
		return l, err
	}
	return l, nil
}

func checkName(name string, at uint64) error {
	if name == "" || strings.ContainsAny(name, "/\x00") {
		return formatErr("link name %q at offset %#x", name, at)
	}
	return nil
}

// symbolTable returns the entries of an old-style group: a version 1 B-tree of
// type 0 whose leaves point to symbol table nodes, names in a local heap.
func (f *File) symbolTable(btree, heapAddr uint64) ([]link, error) {
	heap, err := f.localHeap(heapAddr)
	if err != nil {
		return nil, err
	}
	var ls []link
	seen := map[uint64]bool{}
	budget := uint64(f.size) // symbol table nodes do not overlap
	err = f.walkBTree(btree, 0, f.lenSize, func(_ []byte, child uint64) error {
		// Each node once, so the entries are bounded by the file's size.
		if seen[child] {
			return formatErr("symbol table node at offset %#x: listed twice", child)
		}
		seen[child] = true
		more, err := f.symbolNode(child, heap, &budget)
		ls = append(ls, more...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ls, nil
}

// localHeap returns the data segment of the local heap at addr.
func (f *File) localHeap(addr uint64) ([]byte, error) {
	n := uint64(8 + 2*f.lenSize + f.offSize)
	b, err := f.readAt(addr, n, "local heap")
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(b[:4], []byte("HEAP")) {
		return nil, formatErr("local heap at offset %#x: bad signature", addr)
	}
	if b[4] != 0 {
		return nil, unsupportedErr("local heap at offset %#x: version %d", addr, b[4])
	}
	d := f.decoder(b, addr, "local heap")
	d.skip(8)
	size := d.length()
	d.length() // offset to head of free list
	data := d.addr()
	if d.err != nil {
		return nil, d.err
	}
	return f.readAt(data, size, "local heap data segment")
}

// symbolNode decodes the symbol table node at addr.
func (f *File) symbolNode(addr uint64, heap []byte, budget *uint64) ([]link, error) {
	b, err := f.readAt(addr, 8, "symbol table node")
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(b[:4], []byte("SNOD")) {
		return nil, formatErr("symbol table node at offset %#x: bad signature", addr)
	}
	if b[4] != 1 {
		return nil, unsupportedErr("symbol table node at offset %#x: version %d", addr, b[4])
	}
	n := uint64(b[6]) | uint64(b[7])<<8
	entry := uint64(2*f.offSize + 24)
	if 8+n*entry > *budget {
		return nil, formatErr("symbol table node at offset %#x: the group's nodes add up to more than the file", addr)
	}
	*budget -= 8 + n*entry
	b, err = f.readAt(addr+8, n*entry, "symbol table node")
	if err != nil {
		return nil, err
	}
	d := f.decoder(b, addr+8, "symbol table entry")
	ls := make([]link, 0, n)
	for range n {
		nameOff := d.uint(f.offSize)
		obj := d.addr()
		cache := d.u32()
		d.skip(4 + 16)
		if d.err != nil {
			return nil, d.err
		}
		name, err := heapString(heap, nameOff, addr)
		if err != nil {
			return nil, err
		}
		l := link{name: name, addr: obj}
		if cache == 2 {
			l.kind = linkSoft
		} else if obj == undefined {
			return nil, formatErr("symbol table node at offset %#x: %q has an undefined address", addr, name)
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// heapString returns the NUL-terminated string at off in a local heap.
func heapString(heap []byte, off uint64, at uint64) (string, error) {
	if off >= uint64(len(heap)) {
		return "", formatErr("symbol table node at offset %#x: name offset %d outside the %d-byte local heap", at, off, len(heap))
	}
	s := heap[off:]
	i := bytes.IndexByte(s, 0)
	if i < 0 {
		return "", formatErr("symbol table node at offset %#x: unterminated name in local heap", at)
	}
	name := string(s[:i])
	if err := checkName(name, at); err != nil {
		return "", err
	}
	return name, nil
}

// walkBTree visits the leaf entries of the version 1 B-tree at addr of the given
// node type (0: group nodes, 1: raw data chunks) with keys of keySize bytes,
// calling visit with each child's left key and address in key order. Nodes are
// visited at most once and levels must decrease by one per step, so a malformed
// tree cannot loop.
func (f *File) walkBTree(addr uint64, typ uint8, keySize int, visit func(key []byte, child uint64) error) error {
	seen := map[uint64]bool{}
	budget := uint64(f.size) // nodes do not overlap: together they fit in the file
	var walk func(addr uint64, level int) error
	walk = func(addr uint64, level int) error {
		if seen[addr] {
			return formatErr("B-tree node at offset %#x: visited twice", addr)
		}
		seen[addr] = true
		hdr := uint64(8 + 2*f.offSize)
		b, err := f.readAt(addr, hdr, "B-tree node")
		if err != nil {
			return err
		}
		if !bytes.Equal(b[:4], []byte("TREE")) {
			return formatErr("B-tree node at offset %#x: bad signature", addr)
		}
		if b[4] != typ {
			return formatErr("B-tree node at offset %#x: node type %d, want %d", addr, b[4], typ)
		}
		lv := int(b[5])
		if level >= 0 && lv != level {
			return formatErr("B-tree node at offset %#x: level %d, want %d", addr, lv, level)
		}
		if lv > maxBTreeDepth {
			return formatErr("B-tree node at offset %#x: level %d exceeds %d", addr, lv, maxBTreeDepth)
		}
		n := uint64(b[6]) | uint64(b[7])<<8
		body := n*uint64(keySize+f.offSize) + uint64(keySize)
		if hdr+body > budget {
			return formatErr("B-tree node at offset %#x: the tree's nodes add up to more than the file", addr)
		}
		budget -= hdr + body
		b, err = f.readAt(addr+hdr, body, "B-tree node")
		if err != nil {
			return err
		}
		d := f.decoder(b, addr+hdr, "B-tree node")
		for range n {
			key := d.take(keySize)
			child := d.addr()
			if d.err != nil {
				return d.err
			}
			if lv == 0 {
				if err := visit(key, child); err != nil {
					return err
				}
			} else if err := walk(child, lv-1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(addr, -1)
}

// checkUnknown refuses an object with an unknown message marked "fail if
// unknown".
func checkUnknown(h *objectHeader) error {
	for _, m := range h.msgs {
		if m.flags&msgFlagFailIfUnknown != 0 && m.typ > 0x18 {
			return unsupportedErr("object header at offset %#x: unknown message type %#x marked must-understand", h.addr, m.typ)
		}
	}
	return nil
}
