#!/usr/bin/python3
"""functions_numpy.py - issue 13's functions against NumPy itself, one at a
time, on every dtype and on edge-rich data: NaN, +-inf, +-0.0, the smallest
subnormal, huge values, +-1, halves (round's ties), negative integers, each
integer type's minimum and maximum, and random values, 4,099 elements (so
the JIT's vectorised tiles and their remainders run).  Every function is run
three ways - the JIT (microkernels on), the cc backend and the reference
evaluator (--reference) - and compared with NumPy's own ufunc (not the
random-case oracle of _gen_cases.py): bit for bit where bcgen documents
NumPy's exact result (NaN as any NaN), within the accuracy table of
docs/semantics.md for expit, logaddexp and logaddexp2, and the documented
differences only: sign(bool) is a type error in both, expit is SciPy's
(computed here in float64 and rounded).  Also True and False next to every
dtype (np.result_type).  Run from the repository root with /usr/bin/python3;
prints TAP.
"""
import json
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np

BUILD = os.environ.get("BUILD", "build")
BCGEN = os.path.join(BUILD, "bcgen")
N = 4099

DTYPES = ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64"]
NP = {"bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
      "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
      "f32": np.float32, "f64": np.float64}
NAME_OF = {np.dtype(v): k for k, v in NP.items()}

UNARY = ["sign", "square", "reciprocal", "round", "fix", "deg2rad", "rad2deg", "expit",
         "logical_not"]
BINARY = ["logaddexp", "logaddexp2", "logical_and", "logical_or", "logical_xor"]
FLOAT_RESULT = {"fix", "deg2rad", "rad2deg", "expit", "logaddexp", "logaddexp2"}
# ulps (of max(|x|, 1) for logaddexp*) allowed: docs/semantics.md's table
BOUND = {"expit": 3, "logaddexp": 3, "logaddexp2": 3}

results = []


def check(ok, what, details=()):
    results.append(bool(ok))
    print("%s %d - %s" % ("ok" if ok else "not ok", len(results), what))
    for line in ([] if ok else list(details)[:8]):
        print("#   " + str(line))
    sys.stdout.flush()


def data(dt, rng, shift):
    dt = np.dtype(dt)
    if dt.kind == "b":
        return rng.random(N) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        edge = [info.min, info.min + 1, info.max, info.max - 1, 0, 1, 2, 3]
        if dt.kind == "i":
            edge += [-1, -2, -3]
        v = rng.integers(info.min, info.max, size=N, dtype=dt, endpoint=True)
        small = rng.integers(max(int(info.min), -5), 6, size=N)
        v = np.where(rng.random(N) < 0.5, small.astype(dt), v)
        v[:len(edge)] = np.array(edge, dtype=object).astype(dt)
        return np.roll(v, shift)
    f = np.finfo(dt)
    edge = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, float(f.smallest_subnormal),
            -float(f.smallest_subnormal), float(f.tiny), float(f.max), -float(f.max), 1.0, -1.0,
            0.5, -0.5, 1.5, 2.5, -2.5, 3.5, 100.0, -100.0, 88.7, -88.7, 710.0, -745.0, 1e10,
            -1e10, 0.6931471805599453, -0.6931471805599453]
    with np.errstate(all="ignore"):
        v = (rng.standard_normal(N) * 10.0 ** rng.integers(-3, 4, size=N)).astype(dt)
        v[:len(edge)] = np.array(edge, dtype=np.float64).astype(dt)
    return np.roll(v, shift)


def float_for(dt):
    dt = np.dtype(dt)
    # NumPy's: float16 for bool and 8-bit integers, float32 for 16-bit ones
    if dt.kind == "f":
        return dt
    return np.dtype({1: np.float16, 2: np.float32}.get(dt.itemsize, np.float64))


def expected(name, x, y=None):
    """NumPy's result, with bcgen's documented differences; None: an error."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "sign" and x.dtype.kind == "b":
            return None
        if name in ("sign", "square", "reciprocal", "logical_not"):
            return getattr(np, name)(x)
        if name == "round":
            return np.rint(x.astype(np.float16)) if x.dtype.kind == "b" else np.round(x)
        if name in ("fix", "deg2rad", "rad2deg"):
            return getattr(np, name)(x.astype(float_for(x.dtype)))
        if name == "expit":
            f = float_for(x.dtype)
            x64 = x.astype(f).astype(np.float64)
            e = np.exp(-np.abs(x64))
            return np.where(x64 < 0, e / (1 + e), 1 / (1 + e)).astype(f)
        if name in ("logical_and", "logical_or", "logical_xor"):
            return getattr(np, name)(x, y)
        f = float_for(np.result_type(x, y))
        return getattr(np, name)(x.astype(f), y.astype(f))   # NumPy's own f32 or f64 loop


def ulps(got, want):
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[got.dtype.itemsize]
    def key(v):
        i = v.view(bits).astype(np.int64)
        return np.where(i < 0, -(i & np.int64(np.iinfo(bits).max)), i)
    return np.abs(key(got) - key(want))


def compare(name, got, want, x, y):
    if got.dtype != want.dtype:
        return ["dtype %s, NumPy %s" % (got.dtype, want.dtype)]
    if want.dtype.kind != "f":
        bad = got != want
    else:
        gnan, wnan = np.isnan(got), np.isnan(want)
        with np.errstate(all="ignore"):
            if name in BOUND:
                scale = np.abs(want.astype(np.float64))
                if name.startswith("logaddexp"):
                    scale = np.maximum(scale, 1.0)
                spacing = np.spacing(scale.astype(want.dtype)).astype(np.float64)
                err = np.abs(got.astype(np.float64) - want.astype(np.float64))
                close = (err <= BOUND[name] * spacing) | (got == want)
            else:
                close = ulps(got, want) == 0
        bad = (gnan != wnan) | (~wnan & ~close)
    if not bad.any():
        return []
    i = np.argwhere(bad)[:3].ravel()
    return ["%d of %d differ; at %d: x=%r%s got %r NumPy %r" % (
        int(bad.sum()), bad.size, k, x[k].item(), "" if y is None else " y=%r" % y[k].item(),
        got[k].item(), want[k].item()) for k in i]


def run(expr, specs, extra):
    with tempfile.TemporaryDirectory() as tmp:
        args = [BCGEN, "run", expr]
        for n, arr in specs:
            path = os.path.join(tmp, n + ".npy")
            np.save(path, arr)
            args += ["-i", "%s=%s[%d]=%s" % (n, NAME_OF[arr.dtype], arr.size, path)]
        out = os.path.join(tmp, "out.npy")
        proc = subprocess.run(args + ["-o", out] + extra, capture_output=True, text=True)
        if proc.returncode != 0:
            return None, proc.returncode, proc.stderr.strip()
        return np.load(out), 0, ""


PATHS = [("jit", []), ("cc", ["--backend", "cc"]), ("reference", ["--reference"])]

# Trees of the rows that had no microkernel before issue 11: the JIT runs
# them through its vectorised tiles (explain's form), so the comparisons
# above test the microkernels, not tcc's per-element code.
TILED = ["sign(a) + square(b)", "reciprocal(a) * round(b)", "logaddexp(a, b) - expit(a)",
         "logical_xor(a, b) | logical_not(a)", "a // b + a % b", "a ** b", "~a ^ (a << b) >> b",
         "hypot(a, b) + fmod(a, b) * arctan2(a, b)", "where(isnan(a) | isinf(b), a, b)",
         "fmin(a, b) - fmax(a, b) + copysign(a, b)", "cbrt(a) + arcsinh(b) - erfc(a)"]


def form_of(expr, d):
    proc = subprocess.run([BCGEN, "explain", expr, "-i", "a=%s[%d]" % (d, N), "-i",
                           "b=%s[%d]" % (d, N), "--json"], capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    return json.loads(proc.stdout)["form"]["kind"]


def main():
    rng = np.random.default_rng(13)
    for name in UNARY + BINARY:
        for d in DTYPES:
            x = data(NP[d], rng, 0)
            y = data(NP[d], rng, 5) if name in BINARY else None
            want = expected(name, x, y)
            expr = "%s(a, b)" % name if y is not None else "%s(a)" % name
            specs = [("a", x)] + ([("b", y)] if y is not None else [])
            for path, extra in PATHS:
                got, status, message = run(expr, specs, extra)
                what = "%s over %s, %s" % (expr, d, path)
                if want is None:
                    check(status == 1 and "not defined for bool" in message, what + ": type error",
                          [message])
                    continue
                check(got is not None and not compare(name, got, want, x, y), what,
                      [message] if got is None else compare(name, got, want, x, y))
    for expr in TILED:
        for d in DTYPES + ["f16", "bf16"]:
            kind = form_of(expr, d)
            if kind is not None:  # (a tree that does not type on d: not this check's subject)
                check(kind == "tiles", "%s over %s: the JIT's vectorised tiles" % (expr, d), [kind])
    # mixed dtypes: the float type of the promotion, as NumPy
    for name in ("logaddexp", "logaddexp2", "logical_xor"):
        x, y = data(np.int16, rng, 0), data(np.float32, rng, 3)
        got, _, message = run("%s(a, b)" % name, [("a", x), ("b", y)], [])
        want = expected(name, x, y)
        check(got is not None and not compare(name, got, want, x, y),
              "%s(a, b) over i16 and f32" % name, [message] if got is None else compare(name, got, want, x, y))
    # True and False: weak, as NumPy's Python bools (NEP 50)
    for d in DTYPES:
        x = data(NP[d], rng, 0)
        for lit in ("True", "False"):
            value = lit == "True"
            for op in ("+", "*", "=="):
                got, _, message = run("a %s %s" % (op, lit), [("a", x)], [])
                with np.errstate(all="ignore"):
                    ufunc = {"+": np.add, "*": np.multiply, "==": np.equal}[op]
                    want = ufunc(x, value)   # weak promotion: a's dtype, bool for ==
                want = np.asarray(want)
                check(got is not None and got.dtype == want.dtype and
                      np.array_equal(got, want, equal_nan=want.dtype.kind == "f"),
                      "a %s %s over %s: %s" % (op, lit, d, want.dtype),
                      [message] if got is None else [got.dtype, got[:8], want[:8]])
    print("1..%d" % len(results))
    print("# functions_numpy: %d passed, %d failed" % (sum(results), len(results) - sum(results)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    np._set_promotion_state("weak")
    sys.exit(main())
