#!/usr/bin/python3
"""f16_convert_numpy.py - bcgen's float16 conversions against NumPy's astype.

Through `bcgen run` (the JIT with its F16C microkernels where the run is
long, the straight-line helpers where it is short) and `--reference` (the
evaluator), bit for bit, any NaN matching any NaN:
  - every one of the 65536 f16 bit patterns widened to f32 and f64;
  - f32 to f16 over random bit patterns of every magnitude, the values
    around each f16 rounding tie (the tie, one f32 ulp either side), the
    overflow threshold 65520 and the subnormal range;
  - f64 to f16, rounding once (NumPy's npy_double_to_half), including
    values whose rounding through f32 would differ;
  - i64, i32, u8 and bool to f16, and f16 to i32 (truncating) and bool.

  BUILD=build /usr/bin/python3 tests/diff/f16_convert_numpy.py
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

BCGEN = os.path.join(os.environ.get("BUILD", "build"), "bcgen")
results = []


def check(ok, what, detail=""):
    results.append(ok)
    print("%s %d - %s" % ("ok" if ok else "not ok", len(results), what))
    if not ok and detail:
        print("#   " + detail)


def same(got, want):
    if got.dtype.kind == "f":
        with np.errstate(all="ignore"):
            g, w = got.astype(np.float64), want.astype(np.float64)
        return (np.isnan(g) & np.isnan(w)) | ((g == w) & (np.signbit(g) == np.signbit(w)))
    return got == want


def run(tmp, expr, x, dtype, want, what, short=False):
    path = os.path.join(tmp, "x.npy")
    if short:
        n = x.size // 7 * 7
        x, want = x.reshape(-1)[:n], want.reshape(-1)[:n]
    np.save(path, x)
    for mode in ([], ["--reference"]):
        out = os.path.join(tmp, "out.npy")
        shape = "%d" % x.size
        if short:   # runs shorter than microkernel_run: the straight-line helpers
            shape = "%d,7" % (x.size // 7)
            np.save(path, x.reshape(-1, 7))
        r = subprocess.run([BCGEN, "run", expr, "-i", "a=%s[%s]=%s" % (dtype, shape, path),
                            "-o", out] + mode, capture_output=True, text=True)
        if r.returncode != 0:
            check(False, "%s %s" % (what, mode), r.stderr.strip())
            continue
        got = np.load(out).reshape(-1)
        ok = same(got, want.reshape(-1))
        bad = np.flatnonzero(~ok)[:4]
        check(bool(ok.all()), "%s%s: %d values" % (what, " (reference)" if mode else "", x.size),
              "at %s: input %s got %s want %s" % (bad, x.reshape(-1)[bad], got[bad],
                                                  want.reshape(-1)[bad]))


def main():
    rng = np.random.default_rng(13)
    with tempfile.TemporaryDirectory() as tmp:
        every = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
        run(tmp, "f32(a)", every, "f16", every.astype(np.float32), "every f16 pattern to f32")
        run(tmp, "f64(a)", every, "f16", every.astype(np.float64), "every f16 pattern to f64")
        run(tmp, "f32(a) * 1", every, "f16", every.astype(np.float32),
            "every f16 pattern to f32, short runs", short=True)

        # f32 -> f16: random bits, and the ties of every f16 value
        bits = rng.integers(0, 2**32, 200000, dtype=np.uint64).astype(np.uint32)
        near = (rng.integers(0x30000000, 0x48000000, 200000, dtype=np.uint64)
                | (rng.integers(0, 2, 200000, dtype=np.uint64) << np.uint64(31)))
        x = np.concatenate([bits, near.astype(np.uint32)]).view(np.float32)
        halves = every[np.isfinite(every)].astype(np.float32)
        up = np.nextafter(halves, np.float32(np.inf))
        ties = ((halves.astype(np.float64) + np.nextafter(halves, np.float16(np.inf)).astype(
            np.float16).astype(np.float64)) / 2).astype(np.float32)
        edges = np.array([65504, 65519, 65519.996, 65520, 65536, 6.1035156e-05, 5.9604645e-08,
                          2.9802322e-08, 2.9802326e-08, 1e-8, -0.0, np.inf, -np.inf, np.nan],
                         np.float32)
        x = np.concatenate([x, halves, up, ties, np.nextafter(ties, np.float32(0)),
                            np.nextafter(ties, np.float32(np.inf)), edges])
        with np.errstate(all="ignore"):
            run(tmp, "f16(a)", x, "f32", x.astype(np.float16), "f32 to f16 (random, ties, edges)")
            run(tmp, "f16(a)", x, "f32", x.astype(np.float16), "f32 to f16, short runs",
                short=True)

            # f64 -> f16 rounds once: ties in f32 that are not ties in f64
            d = np.concatenate([rng.standard_normal(50000) * 10.0 ** rng.integers(-9, 6, 50000),
                                ties.astype(np.float64) + 2.0 ** -40,
                                ties.astype(np.float64) - 2.0 ** -40,
                                edges.astype(np.float64)])
            run(tmp, "f16(a)", d, "f64", d.astype(np.float16), "f64 to f16 (rounding once)")

            i = np.concatenate([rng.integers(-2**62, 2**62, 20000), rng.integers(-70000, 70000, 20000),
                                np.array([65504, 65519, 65520, 2049, 2051, -2**63, 2**63 - 1])])
            run(tmp, "f16(a)", i, "i64", i.astype(np.float16), "i64 to f16")
            u = rng.integers(0, 256, 1000).astype(np.uint8)
            run(tmp, "f16(a)", u, "u8", u.astype(np.float16), "u8 to f16")
            finite = every[np.isfinite(every)]
            run(tmp, "i32(a)", finite, "f16", np.trunc(finite.astype(np.float64)).astype(np.int32),
                "finite f16 to i32 (truncating)")
            run(tmp, "bool(a)", every, "f16", every != 0, "every f16 pattern to bool (NaN true)")
    print("1..%d" % len(results))
    print("# f16_convert_numpy: %d passed, %d failed" % (sum(results), len(results) - sum(results)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
