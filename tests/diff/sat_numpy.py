#!/usr/bin/python3
"""sat_numpy.py - the saturating functions (add_sat, sub_sat, mul_q7,
mul_q15, mul_q31; docs/semantics.md, "Saturating arithmetic") against a
NumPy reference of their documented semantics: NumPy has no saturating
ufuncs, so the oracle computes each element exactly in Python integers
(NumPy object arrays), floors the fixed-point products with //, and clips
to the result type with np.clip.

Cases (seed 14): every integer dtype with itself and a sample of mixed
pairs (the promotion saturates; i64 with u64 and bool are type errors, as
are floats); data holding every pair of the type's edge values (minimum,
minimum + 1, -1, 0, 1, maximum - 1, maximum) followed by random values,
1,100 elements or more so the JIT's tiles and remainders run; broadcasts
of rank 2 and 3; weak literals at the type's edges (and one that does not
fit: an error); the fixed-point products on their own types, mixed with
narrower ones, and their literal-only forms.  Each case runs through the
JIT, the cc backend and the reference evaluator (--reference) and must be
bit for bit the oracle's result, dtype included; also on 2 threads with
--unroll 4 (and three cases of 300,000 elements that are split).  Run from the repository
root with /usr/bin/python3; prints TAP.
"""
import concurrent.futures
import itertools
import os
import subprocess
import sys
import tempfile

import numpy as np

BUILD = os.environ.get("BUILD", "build")
BCGEN = os.path.join(BUILD, "bcgen")

INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
NP = {"bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
      "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
      "f32": np.float32, "f64": np.float64}
NAME_OF = {np.dtype(v): k for k, v in NP.items()}
FIXED = {"mul_q7": ("i8", 7), "mul_q15": ("i16", 15), "mul_q31": ("i32", 31)}
PATHS = [("jit", []), ("cc", ["--backend", "cc"]), ("reference", ["--reference"]),
         ("threads", ["--threads", "2", "--unroll", "4"])]

results = []
# the three paths of a case run at once (each is a bcgen process)
POOL = concurrent.futures.ThreadPoolExecutor(len(PATHS))


def check(ok, what, details=()):
    results.append(bool(ok))
    print("%s %d - %s" % ("ok" if ok else "not ok", len(results), what))
    for line in ([] if ok else list(details)[:8]):
        print("#   " + str(line))
    sys.stdout.flush()


def edges(dt):
    info = np.iinfo(dt)
    values = {int(info.min), int(info.min) + 1, 0, 1, int(info.max) - 1, int(info.max)}
    if info.min < 0:
        values.add(-1)
    return sorted(values)


def data(dt, rng, n, first):
    """N values of DT: FIRST (a list of edge values) then random ones, half
    of them small so that sums land on both sides of the limits."""
    dt = np.dtype(dt)
    info = np.iinfo(dt)
    v = rng.integers(info.min, info.max, size=n, dtype=dt, endpoint=True)
    near = rng.integers(0, 6, size=n)
    top = (np.full(n, int(info.max), dtype=object) - near).astype(dt)
    bottom = (np.full(n, int(info.min), dtype=object) + near).astype(dt)
    pick = rng.random(n)
    v = np.where(pick < 0.25, top, np.where(pick < 0.5, bottom, v))
    v[:len(first)] = np.array(first, dtype=object).astype(dt)
    return v


def promote(a, b):
    """The result dtype bcgen documents (NumPy's promotion, weak Python
    ints), or None for a type error."""
    da = a.dtype if isinstance(a, np.ndarray) else None
    db = b.dtype if isinstance(b, np.ndarray) else None
    if da is None and db is None:
        return np.dtype(np.int64)
    if da is None or db is None:
        dt = da if db is None else db
        lit = a if da is None else b
        info = np.iinfo(dt)
        return dt if info.min <= lit <= info.max else None
    dt = np.result_type(da, db)
    return dt if dt.kind in "iu" else None


def oracle(name, a, b):
    """The documented result of NAME(a, b), or None for a type error."""
    if name in FIXED:
        t, bits = FIXED[name]
        dt = np.dtype(NP[t])
        for v in (a, b):
            if isinstance(v, np.ndarray):
                if np.result_type(v.dtype, dt) != dt:
                    return None
            elif not (np.iinfo(dt).min <= v <= np.iinfo(dt).max):
                return None
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and \
                np.result_type(a.dtype, b.dtype) != dt:
            return None
        exact = np.asarray(a, dtype=object) * np.asarray(b, dtype=object) // (1 << bits)
    else:
        dt = promote(a, b)
        if dt is None:
            return None
        x, y = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
        exact = x + y if name == "add_sat" else x - y
    info = np.iinfo(dt)
    clipped = np.clip(exact, int(info.min), int(info.max))
    return np.asarray(clipped).astype(dt)


def run(expr, specs, extra):
    with tempfile.TemporaryDirectory() as tmp:
        args = [BCGEN, "run", expr]
        for n, arr in specs:
            path = os.path.join(tmp, n + ".npy")
            np.save(path, arr)
            args += ["-i", "%s=%s[%s]=%s" % (n, NAME_OF[arr.dtype],
                                             ",".join(str(s) for s in arr.shape), path)]
        out = os.path.join(tmp, "out.npy")
        proc = subprocess.run(args + ["-o", out] + extra, capture_output=True, text=True)
        if proc.returncode != 0:
            return None, proc.returncode, proc.stderr.strip()
        return np.load(out), 0, ""


def differences(got, want, a, b):
    if got.dtype != want.dtype:
        return ["dtype %s, expected %s" % (got.dtype, want.dtype)]
    if got.shape != want.shape:
        return ["shape %s, expected %s" % (got.shape, want.shape)]
    bad = got != want
    if not bad.any():
        return []
    a = np.broadcast_to(np.asarray(a), want.shape)
    b = np.broadcast_to(np.asarray(b), want.shape)
    return ["%d of %d differ; at %s: x=%r y=%r got %r expected %r" % (
        int(bad.sum()), bad.size, tuple(k), a[tuple(k)].item(), b[tuple(k)].item(),
        got[tuple(k)].item(), want[tuple(k)].item()) for k in np.argwhere(bad)[:3]]


def case(name, a, b, what):
    """NAME over A and B (arrays become operands a, b; ints literals) on
    every path."""
    specs, texts = [], []
    for operand, v in (("a", a), ("b", b)):
        if isinstance(v, np.ndarray):
            specs.append((operand, v))
            texts.append(operand)
        else:
            texts.append(str(v) if v >= 0 else "(%d)" % v)
    expr = "%s(%s, %s)" % (name, texts[0], texts[1])
    want = oracle(name, a, b)
    if not specs:   # literals only: an unread operand; the result is the folded value
        specs = [("a", np.zeros(1, np.int8))]
    runs = list(POOL.map(lambda extra: run(expr, specs, extra), [e for _, e in PATHS]))
    for (path, _), (got, status, message) in zip(PATHS, runs):
        label = "%s %s, %s" % (expr, what, path)
        if want is None:
            check(status == 1 and ("integer arguments" in message or "arguments (Q" in message
                                   or "does not fit" in message),
                  label + ": type error", [message or "accepted: %r" % (got,)])
            continue
        if got is not None and want.ndim == 0:
            got = got.reshape(())
        check(got is not None and not differences(got, want, a, b), label,
              [message] if got is None else differences(got, want, a, b))


def main():
    rng = np.random.default_rng(14)
    pairs = [(d, d) for d in INTS]
    mixed = [p for p in itertools.permutations(INTS, 2)]
    rng.shuffle(mixed)
    pairs += [tuple(p) for p in mixed[:8]] + [("i64", "u64"), ("u8", "i8")]
    for da, db in pairs:
        # every pair of edge values, then random ones: 1,100 elements or more
        ea, eb = edges(NP[da]), edges(NP[db])
        grid = list(itertools.product(ea, eb))
        n = max(1100, len(grid))
        a = data(NP[da], rng, n, [g[0] for g in grid])
        b = data(NP[db], rng, n, [g[1] for g in grid])
        for name in ("add_sat", "sub_sat"):
            case(name, a, b, "over %s and %s" % (da, db))
    # large enough to be split between threads, and for the JIT's tiles
    for name, t in (("add_sat", "i16"), ("sub_sat", "u8"), ("mul_q15", "i16")):
        e = edges(NP[t])
        grid = list(itertools.product(e, e))
        a = data(NP[t], rng, 300000, [g[0] for g in grid]).reshape(300, 1000)
        b = data(NP[t], rng, 300000, [g[1] for g in grid]).reshape(300, 1000)
        case(name, a, b, "over %s (300,1000)" % t)
    # bool and floats: type errors
    for name in ("add_sat", "sub_sat"):
        case(name, rng.random(8) < 0.5, rng.random(8) < 0.5, "over bool")
        case(name, data(np.int16, rng, 8, []), rng.random(8).astype(np.float32),
             "over i16 and f32")
    # broadcasts: (5, 1, 7) with (3, 7), and a row with a column
    for d in ("i8", "u16", "i32", "u64"):
        a = data(NP[d], rng, 35, edges(NP[d])).reshape(5, 1, 7)
        b = data(NP[d], rng, 21, edges(NP[d])[::-1]).reshape(3, 7)
        for name in ("add_sat", "sub_sat"):
            case(name, a, b, "over %s (5,1,7) with (3,7)" % d)
        col = data(NP[d], rng, 9, edges(NP[d])).reshape(9, 1)
        row = data(NP[d], rng, 9, edges(NP[d])[::-1]).reshape(1, 9)
        case("sub_sat", col, row, "over %s (9,1) with (1,9)" % d)
    # weak literals at the edges of the other argument's type
    for d in INTS:
        x = data(NP[d], rng, 300, edges(NP[d]))
        info = np.iinfo(NP[d])
        for lit in (int(info.max), int(info.min)):
            for name in ("add_sat", "sub_sat"):
                case(name, x, lit, "over %s" % d)
        case("add_sat", int(info.max), x, "over %s" % d)
        # a literal that does not fit: an error
        case("add_sat", x, int(info.max) + 1 if info.max < 2**64 - 1 else -1, "over %s" % d)
    # the fixed-point products
    for name, (t, bits) in FIXED.items():
        dt = NP[t]
        e = edges(dt)
        grid = list(itertools.product(e, e))
        a = data(dt, rng, 2000, [g[0] for g in grid])
        b = data(dt, rng, 2000, [g[1] for g in grid])
        case(name, a, b, "over %s" % t)
        info = np.iinfo(dt)
        case(name, a, int(info.min), "over %s" % t)
        case(name, a, int(info.max), "over %s" % t)
        case(name, int(info.min), int(info.min), "(literals)")
        case(name, a.reshape(40, 50), b[:50].reshape(1, 50), "over %s (40,50) with (1,50)" % t)
        narrow = {"i8": None, "i16": "i8", "i32": "i16"}[t]
        if narrow:   # a narrower argument promotes to the row's type
            n = data(NP[narrow], rng, 2000, edges(NP[narrow]))
            case(name, n, b, "over %s and %s" % (narrow, t))
        wider = {"i8": "i16", "i16": "i32", "i32": "i64"}[t]
        case(name, a, data(NP[wider], rng, 2000, []), "over %s and %s" % (t, wider))
        case(name, data(np.uint8 if t != "i8" else np.uint16, rng, 16, []), b[:16],
             "unsigned")
    print("1..%d" % len(results))
    print("# sat_numpy: %d passed, %d failed" % (sum(results), len(results) - sum(results)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
