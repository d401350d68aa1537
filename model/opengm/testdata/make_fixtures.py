#!/usr/bin/python3
"""Writes the OpenGM HDF5 fixtures of model/opengm and the same models as LG files.

Run from this directory with Debian's h5py (apt-get install python3-h5py):
    /usr/bin/python3 make_fixtures.py
or, for the benchmark's large model (not committed), a W×H Potts grid of K labels:
    /usr/bin/python3 make_fixtures.py --grid W H K OUT.h5

Each model is written twice: NAME.h5 in OpenGM's layout (group "gm": header,
numbers-of-states, factors, function-id-<ID>/{indices,values}; explicit tables first
variable fastest), and NAME.LG, a UAI file of log values (energy = -value) with the
same tables (last variable fastest) and every parametric function as its table. The
tests read both and compare energies and solve results. Values are multiples of 1/8,
so float32 files hold them exactly. The random draws are seeded: the files are
reproducible.
"""
import numpy as np
import h5py

EXPLICIT, SPARSE, ABSDIFF, TRUNCABSDIFF, SQDIFF, TRUNCSQDIFF, POTTS, POTTSN, CONSTANT = range(16000, 16009)


class Model:
    def __init__(self, labels):
        self.labels = list(labels)
        self.functions = {}  # type id -> list of (indices, values, table C-order)
        self.factors = []    # (type id, function index, variables)

    def add(self, typ, indices, values, table):
        fs = self.functions.setdefault(typ, [])
        fs.append((list(indices), list(values), np.asarray(table, dtype=np.float64)))
        return typ, len(fs) - 1

    def explicit(self, table):
        table = np.asarray(table, dtype=np.float64)
        if table.ndim == 0:
            return self.add(EXPLICIT, [0], [float(table)], table)
        return self.add(EXPLICIT, [table.ndim] + list(table.shape), list(table.flatten(order="F")), table)

    def potts(self, k1, k2, eq, ne):
        t = np.full((k1, k2), ne)
        for l in range(min(k1, k2)):
            t[l, l] = eq
        return self.add(POTTS, [k1, k2], [eq, ne], t)

    def factor(self, fn, variables):
        self.factors.append((fn[0], fn[1], list(variables)))

    def write_h5(self, path, libver, chunked=False, dtype=np.float64):
        types = sorted(self.functions)
        kw = {}
        if chunked:
            kw = dict(chunks=True, compression="gzip", shuffle=True)
        with h5py.File(path, "w", libver=libver) as f:
            g = f.create_group("gm")
            header = [2, 0, len(self.labels), len(self.factors), len(types)]
            for t in types:
                header += [t, len(self.functions[t])]
            header.append(1 if dtype == np.float64 else 0)  # values as double / float
            g.create_dataset("header", data=np.array(header, dtype=np.uint64))
            g.create_dataset("numbers-of-states", data=np.array(self.labels, dtype=np.uint64), **kw)
            for t in types:
                idx = [i for (ind, _, _) in self.functions[t] for i in ind]
                val = [v for (_, vals, _) in self.functions[t] for v in vals]
                sub = g.create_group("function-id-%d" % t)
                sub.create_dataset("indices", data=np.array(idx, dtype=np.uint64), **kw)
                sub.create_dataset("values", data=np.array(val, dtype=dtype), **kw)
            fac = []
            for typ, i, vs in self.factors:
                fac += [i, types.index(typ), len(vs)] + vs
            g.create_dataset("factors", data=np.array(fac, dtype=np.uint64), **kw)

    def write_lg(self, path):
        with open(path, "w") as f:
            f.write("MARKOV\n%d\n%s\n%d\n" % (len(self.labels), " ".join(map(str, self.labels)), len(self.factors)))
            for _, _, vs in self.factors:
                f.write("%d %s\n" % (len(vs), " ".join(map(str, vs))))
            for typ, i, vs in self.factors:
                table = self.functions[typ][i][2]
                flat = table.flatten(order="C") if table.ndim else [float(table)]
                f.write("\n%d\n%s\n" % (len(flat), " ".join(repr(-float(v)) if v != np.inf else "-inf" for v in flat)))


def eighths(rng, shape, forbid=0.0):
    t = np.round(rng.uniform(-4, 4, size=shape) * 8) / 8
    if forbid:
        t[rng.uniform(size=shape) < forbid] = np.inf
        t.flat[0] = 0.0  # the all-zero labeling stays feasible
    return t


def potts_grid(rng, w, h, k):
    m = Model([k] * (w * h))
    smooth = m.potts(k, k, 0.0, 1.25)
    for v in range(w * h):
        m.factor(m.explicit(eighths(rng, (k,))), [v])
    for y in range(h):
        for x in range(w):
            v = y * w + x
            if x + 1 < w:
                m.factor(smooth, [v, v + 1])
            if y + 1 < h:
                m.factor(smooth, [v, v + w])
    return m


def mixed(rng):
    labels = [2, 3, 4, 3, 2, 3, 4, 2]
    m = Model(labels)
    for v, k in enumerate(labels):
        m.factor(m.explicit(eighths(rng, (k,), forbid=0.1)), [v])
    for a, b in [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (0, 7)]:
        m.factor(m.explicit(eighths(rng, (labels[a], labels[b]), forbid=0.05)), [a, b])
    m.factor(m.explicit(eighths(rng, (labels[1], labels[2], labels[5]), forbid=0.05)), [1, 2, 5])
    m.factor(m.potts(3, 4, 0.0, 0.625), [1, 2])
    m.factor(m.potts(3, 4, 0.5, -0.25), [5, 6])
    m.factor(m.explicit(1.5), [])
    d = lambda k1, k2: np.subtract.outer(np.arange(k1), np.arange(k2)).astype(float)
    m.factor(m.add(ABSDIFF, [3, 4], [0.75], 0.75 * np.abs(d(3, 4))), [3, 6])
    m.factor(m.add(TRUNCABSDIFF, [4, 3], [2.0, 0.5], 0.5 * np.minimum(np.abs(d(4, 3)), 2.0)), [2, 5])
    m.factor(m.add(SQDIFF, [3, 3], [0.25], 0.25 * d(3, 3) ** 2), [1, 3])
    m.factor(m.add(TRUNCSQDIFF, [4, 4], [4.0, 0.375], 0.375 * np.minimum(d(4, 4) ** 2, 4.0)), [2, 6])
    pn = np.full((3, 4, 3), 0.5)
    for l in range(3):
        pn[l, l, l] = -1.0
    m.factor(m.add(POTTSN, [3, 3, 4, 3], [-1.0, 0.5], pn), [1, 2, 3])
    m.factor(m.add(CONSTANT, [2, 2, 2], [0.875], np.full((2, 2), 0.875)), [0, 4])
    sp = np.full((2, 3), 2.0)
    sp[1, 0], sp[1, 2] = -1.0, 3.0  # linear keys (first variable fastest) 1 and 5
    m.factor(m.add(SPARSE, [2, 2, 3, 2, 1, 5], [2.0, -1.0, 3.0], sp), [4, 5])
    return m


def main():
    rng = np.random.default_rng(20261122)
    grid = potts_grid(rng, 6, 5, 3)
    grid.write_h5("potts_grid_sb0.h5", "earliest")
    grid.write_h5("potts_grid_sb2_chunked.h5", ("v108", "v108"), chunked=True)
    grid.write_lg("potts_grid.LG")
    mix = mixed(rng)
    mix.write_h5("mixed_sb0.h5", "earliest")
    mix.write_h5("mixed_sb0_chunked_float.h5", "earliest", chunked=True, dtype=np.float32)
    # Superblock 2 keeps a group of more than 8 members, as the mixed model's 12, in
    # dense link storage (fractal heap and version 2 B-tree).
    mix.write_h5("mixed_sb2_dense_chunked.h5", ("v108", "v108"), chunked=True)
    mix.write_lg("mixed.LG")


def big_grid(w, h, k, path):
    """A W×H grid in OpenGM's layout, built with whole-array operations: one explicit
    unary function per variable, one shared Potts function, chunked gzip datasets."""
    rng = np.random.default_rng(7)
    n = w * h
    unary_idx = np.tile(np.array([1, k], dtype=np.uint64), n)
    unary_val = np.round(rng.uniform(0, 4, size=n * k) * 8) / 8
    v = np.arange(n, dtype=np.uint64).reshape(h, w)
    right = np.stack([v[:, :-1].ravel(), v[:, 1:].ravel()], axis=1)
    down = np.stack([v[:-1, :].ravel(), v[1:, :].ravel()], axis=1)
    pairs = np.concatenate([right, down])
    fu = np.stack([np.arange(n, dtype=np.uint64), np.zeros(n, np.uint64), np.ones(n, np.uint64), v.ravel()], axis=1)
    fp = np.concatenate([np.zeros((len(pairs), 1), np.uint64), np.ones((len(pairs), 1), np.uint64),
                         np.full((len(pairs), 1), 2, np.uint64), pairs], axis=1)
    factors = np.concatenate([fu.ravel(), fp.ravel()])
    kw = dict(chunks=(1 << 16,), compression="gzip", shuffle=True)
    with h5py.File(path, "w") as f:
        g = f.create_group("gm")
        header = [2, 0, n, n + len(pairs), 2, EXPLICIT, n, POTTS, 1, 1]
        g.create_dataset("header", data=np.array(header, dtype=np.uint64))
        g.create_dataset("numbers-of-states", data=np.full(n, k, dtype=np.uint64), **kw)
        e = g.create_group("function-id-%d" % EXPLICIT)
        e.create_dataset("indices", data=unary_idx, **kw)
        e.create_dataset("values", data=unary_val, **kw)
        p = g.create_group("function-id-%d" % POTTS)
        p.create_dataset("indices", data=np.array([k, k], dtype=np.uint64))
        p.create_dataset("values", data=np.array([0.0, 1.25]))
        g.create_dataset("factors", data=factors, **kw)


if __name__ == "__main__":
    import sys
    if len(sys.argv) == 6 and sys.argv[1] == "--grid":
        big_grid(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    else:
        main()
