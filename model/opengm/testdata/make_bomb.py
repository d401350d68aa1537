#!/usr/bin/python3
"""Writes bomb_values.h5: a 1.5 MB OpenGM file whose values dataset holds 2·10^8
zeros (1.6 GB once inflated) for a model that needs 4 values. Run from this
directory with Debian's h5py: /usr/bin/python3 make_bomb.py bomb_values.h5 200000000
"""
import numpy as np, h5py, sys
# A model of 2 variables with one explicit 2x2 function, whose values dataset
# holds N zeros (gzip): a reader that inflates datasets before checking what the
# functions need allocates gigabytes (partopt refuses it from its declared size).
N = int(sys.argv[2])
with h5py.File(sys.argv[1], "w") as f:
    g = f.create_group("gm")
    g["header"] = np.array([2, 0, 2, 1, 1, 16000, 1], dtype=np.uint64)
    g["numbers-of-states"] = np.array([2, 2], dtype=np.uint64)
    g["factors"] = np.array([0, 0, 2, 0, 1], dtype=np.uint64)
    fg = g.create_group("function-id-16000")
    fg["indices"] = np.array([2, 2, 2], dtype=np.uint64)
    d = fg.create_dataset("values", shape=(N,), dtype=np.float64, chunks=(1 << 20,), compression="gzip", compression_opts=9)
    z = np.zeros(1 << 20)
    for i in range(0, N, 1 << 20):
        d[i:i + min(1 << 20, N - i)] = z[:min(1 << 20, N - i)]
