#!/usr/bin/python3
"""Writes the HDF5 fixtures of internal/hdf5 and expected.json.

Run from this directory with Debian's h5py (apt-get install python3-h5py):

    /usr/bin/python3 make_fixtures.py

Every file holds the same tree (see build) written with different library
version bounds: sb0.h5 (h5py's default, superblock 0, old-style groups),
sb2.h5 (libver v108: superblock 2, object header v2, link messages) and
sb3.h5 (libver latest: superblock 3, layout message v4 for chunked data).
expected.json records, per file and dataset, the shape, the numpy dtype and
the values flattened in C order (integers exact, floats as Python floats,
which JSON round-trips exactly).
"""
import json

import h5py
import numpy as np


def put(g, name, data, **kw):
    g.create_dataset(name, data=data, **kw)


def build(f, many, links):
    t = f.create_group("types")
    put(t, "u64", np.array([0, 1, 2, 2**63, 2**64 - 1], dtype="<u8"))
    put(t, "i64", np.array([-(2**63), -1, 0, 1, 2**63 - 1], dtype="<i8"))
    put(t, "i32", np.arange(-10, 10, dtype="<i4"))
    put(t, "u16", np.arange(0, 65536, 4099, dtype="<u2"))
    put(t, "i8", np.arange(-128, 128, 17, dtype="i1"))
    put(t, "u8", np.arange(0, 256, 15, dtype="u1"))
    put(t, "f32", (np.arange(12, dtype="<f4") * 0.5 - 3).astype("<f4"))
    put(t, "f64", np.array([-1.5, 0.1, 1e300, -0.0, 3.25], dtype="<f8"))

    b = f.create_group("be")
    put(b, "u8", np.array([1, 2**40 + 3, 2**64 - 2], dtype=">u8"))
    put(b, "f8", np.array([0.1, -2.5, 1e-300], dtype=">f8"))
    put(b, "i2", np.array([-32768, -2, 300, 32767], dtype=">i2"))
    put(b, "f4", np.array([0.5, -1.25, 3e38], dtype=">f4"))
    put(b, "i4gz", np.arange(-50, 50, dtype=">i4"), chunks=(7,),
        compression="gzip", shuffle=True)

    lay = f.create_group("layout")
    put(lay, "contig", np.arange(20, dtype="<f8"))
    put(lay, "chunked", np.arange(100, dtype="<i4"), chunks=(16,))
    put(lay, "gzip", np.arange(400, dtype="<f8") / 8, chunks=(64,),
        compression="gzip", compression_opts=6)
    put(lay, "gzip_shuffle", np.arange(30 * 17, dtype="<i4").reshape(30, 17) - 100,
        chunks=(8, 5), compression="gzip", shuffle=True)
    put(lay, "empty", np.zeros((0,), dtype="<f8"))
    put(lay, "scalar", np.float64(2.5))
    # Partially written: chunks never written hold the fill value.
    d = lay.create_dataset("fill", shape=(40,), dtype="<i2", chunks=(10,),
                           fillvalue=-7)
    d[12:18] = np.arange(6, dtype="<i2")
    # Compact layout through the low-level API.
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    space = h5py.h5s.create_simple((6,))
    did = h5py.h5d.create(lay.id, b"compact", h5py.h5t.STD_U32LE, space, dcpl=dcpl)
    did.write(h5py.h5s.ALL, h5py.h5s.ALL, np.arange(6, dtype="<u4") * 3)
    did.close()

    m = f.create_group("multi")
    put(m, "d3", np.arange(24, dtype="<i8").reshape(2, 3, 4) * 1000)
    put(m, "d2chunk", (np.arange(9 * 11, dtype="<f4").reshape(9, 11) / 4),
        chunks=(4, 4), compression="gzip")
    put(m, "zerodim", np.zeros((3, 0), dtype="<i4"))

    f.create_group("nested/a/b")
    put(f["nested/a/b"], "data", np.array([7, 8, 9], dtype="<u2"))
    put(f["nested/a"], "x", np.array([1.0], dtype="<f8"))

    g = f.create_group("many")
    for i in range(many):
        put(g, "d%03d" % i, np.array([i], dtype="<i4"))
    # Hard links are cheap symbol table entries: enough of them make the
    # old-style group's B-tree grow a second level.
    for i in range(links):
        g["l%03d" % i] = g["d%03d" % (i % many)]

    u = f.create_group("other")
    put(u, "lzf", np.arange(50, dtype="<i4"), chunks=(10,), compression="lzf")
    put(u, "fletcher", np.arange(50, dtype="<i4"), chunks=(10,), fletcher32=True)
    put(u, "str", np.array([b"ab", b"cd"], dtype="S2"))


def build_v4(f):
    """Chunk indexes of layout message version 4 (libver latest only)."""
    v = f.create_group("v4")
    put(v, "single", np.arange(12, dtype="<i4").reshape(3, 4), chunks=(3, 4))
    put(v, "single_gzip", np.arange(12, dtype="<f8"), chunks=(12,),
        compression="gzip")
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((4,))
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    space = h5py.h5s.create_simple((10,))
    did = h5py.h5d.create(v.id, b"implicit", h5py.h5t.STD_I16LE, space, dcpl=dcpl)
    did.write(h5py.h5s.ALL, h5py.h5s.ALL, np.arange(10, dtype="<i2") * -3)
    did.close()
    # More than 1024 chunks: a paged fixed array.
    put(v, "paged", (np.arange(1100) % 251).astype("u1"), chunks=(1,))
    put(v, "extensible", np.arange(5, dtype="<i4"), chunks=(2,), maxshape=(None,))


def record(f):
    out = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            a = obj[()]
            a = np.asarray(a)
            vals = [] if a.dtype.kind == "S" else a.ravel().tolist()
            out[name] = {"shape": list(a.shape), "dtype": a.dtype.str,
                         "values": vals}

    f.visititems(visit)
    return out


def main():
    specs = [
        ("sb0.h5", {}, 16, 200),
        ("sb2.h5", {"libver": ("v108", "v108")}, 12, 200),
        ("sb3.h5", {"libver": "latest"}, 12, 0),
    ]
    expected = {}
    for name, kw, many, links in specs:
        with h5py.File(name, "w", **kw) as f:
            build(f, many, links)
            if name == "sb3.h5":
                build_v4(f)
        with h5py.File(name, "r") as f:
            expected[name] = record(f)
    with h5py.File("userblock.h5", "w", userblock_size=512) as f:
        put(f, "x", np.arange(5, dtype="<i4"))
    with h5py.File("userblock.h5", "r") as f:
        expected["userblock.h5"] = record(f)
    # Small files, the seeds of FuzzOpen: one of each storage kind.
    for name, kw in [("small0.h5", {}), ("small2.h5", {"libver": ("v108", "v108")})]:
        with h5py.File(name, "w", **kw) as f:
            put(f, "c", np.arange(-3, 3, dtype=">i2"))
            put(f, "z", np.arange(30, dtype="<f4").reshape(5, 6), chunks=(2, 4),
                compression="gzip", shuffle=True, fletcher32=True)
            g = f.create_group("g")
            put(g, "u", np.arange(3, dtype="<u8"))
        with h5py.File(name, "r") as f:
            expected[name] = record(f)
    with open("expected.json", "w") as w:
        json.dump(expected, w, sort_keys=True, separators=(",", ":"))
        w.write("\n")


if __name__ == "__main__":
    main()
