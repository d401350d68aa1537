#!/usr/bin/env python3
"""Independent reference energies for partopt's tests.

A second, deliberately plain implementation of the UAI (MARKOV/BAYES), LG and WCSP
energy definitions, with evidence files and solution files, written without looking
at the Go code. It prints one TSV row per (model, labeling): the model path, the
labeling path and the energy as repr(float) (or +Inf), so the Go tests can compare
`partopt energy` against it to 1e-6 relative.

usage: refenergy.py MODEL LABELING [MODEL LABELING ...]
       refenergy.py --lg IN.uai OUT.LG      (convert probabilities to natural logs)
MODEL.evid is applied when it exists (a contradicting labeling has energy +Inf).
"""
import gzip
import lzma
import math
import os
import sys


def tokens(path):
    opener = open
    if path.endswith(".xz"):
        opener = lzma.open
    elif path.endswith(".gz"):
        opener = gzip.open
    with opener(path, "rt") as f:
        return f.read().split()


def base(path):
    for c in (".xz", ".gz"):
        if path.endswith(c):
            return path[: -len(c)]
    return path


def read_uai(path, log_domain):
    t = tokens(path)
    i = 1  # MARKOV / BAYES
    n = int(t[i]); i += 1
    cards = [int(x) for x in t[i:i + n]]; i += n
    m = int(t[i]); i += 1
    scopes = []
    for _ in range(m):
        k = int(t[i]); i += 1
        scopes.append([int(x) for x in t[i:i + k]]); i += k
    factors = []
    for s in scopes:
        cnt = int(t[i]); i += 1
        vals = [float(x) for x in t[i:i + cnt]]; i += cnt
        if log_domain:
            en = [-v for v in vals]
        else:
            en = [math.inf if v == 0 else -math.log(v) for v in vals]
        factors.append((s, en))
    return cards, factors


def read_wcsp(path):
    t = tokens(path)
    n, _, c, ub = int(t[1]), int(t[2]), int(t[3]), float(t[4])
    i = 5
    cards = [int(x) for x in t[i:i + n]]; i += n
    factors = []
    cost = lambda v: math.inf if v >= ub else v
    for _ in range(c):
        k = int(t[i]); i += 1
        s = [int(x) for x in t[i:i + k]]; i += k
        default = float(t[i]); nt = int(t[i + 1]); i += 2
        size = 1
        for v in s:
            size *= cards[v]
        en = [cost(default)] * size
        for _ in range(nt):
            idx = 0
            for d, v in enumerate(s):
                idx = idx * cards[v] + int(t[i + d])
            en[idx] = cost(float(t[i + k])); i += k + 1
        factors.append((s, en))
    return cards, factors


def read_model(path):
    b = base(path)
    if b.endswith(".wcsp"):
        return read_wcsp(path)
    return read_uai(path, b.lower().endswith(".lg"))


def read_labeling(path, n):
    t = tokens(path)
    if t and t[0].upper() in ("MPE", "MAP"):
        t = t[1:]
    x = [int(v) for v in t]
    if len(x) == n + 1 and x[0] == n:
        x = x[1:]
    assert len(x) == n, (path, len(x), n)
    return x


def read_evidence(path):
    t = [int(v) for v in tokens(path)]
    if len(t) == 1 + 2 * t[0]:
        t = t[1:]
    elif t[0] == 1 and len(t) == 2 + 2 * t[1]:
        t = t[2:]
    return {t[j]: t[j + 1] for j in range(0, len(t), 2)}


def energy(cards, factors, x):
    e = 0.0
    for s, en in factors:
        idx = 0
        for v in s:
            idx = idx * cards[v] + x[v]
        e += en[idx]
    return e


def to_lg(src, dst):
    t = tokens(src)
    n = int(t[1]); m = int(t[2 + n])
    i = 3 + n
    for _ in range(m):
        i += 1 + int(t[i])
    lines = [t[0], str(n), " ".join(t[2:2 + n]), str(m)]
    j = 3 + n
    for _ in range(m):
        k = int(t[j])
        lines.append(" ".join(t[j:j + 1 + k]))
        j += 1 + k
    out = []
    for _ in range(m):
        cnt = int(t[i]); i += 1
        vals = [float(v) for v in t[i:i + cnt]]; i += cnt
        out.append(str(cnt))
        out.append(" ".join("-inf" if v == 0 else repr(math.log(v)) for v in vals))
    with open(dst, "w") as f:
        f.write("\n".join(lines) + "\n\n" + "\n".join(out) + "\n")


def main(args):
    if args and args[0] == "--lg":
        to_lg(args[1], args[2])
        return
    for mp, lp in zip(args[0::2], args[1::2]):
        cards, factors = read_model(mp)
        x = read_labeling(lp, len(cards))
        e = energy(cards, factors, x)
        ev = mp + ".evid"
        if os.path.exists(ev) and any(x[v] != l for v, l in read_evidence(ev).items()):
            e = math.inf
        print("%s\t%s\t%s" % (mp, lp, "+Inf" if e == math.inf else repr(e)))


if __name__ == "__main__":
    main(sys.argv[1:])
