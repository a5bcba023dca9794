#!/usr/bin/python3
"""npy_numpy.py - gen/npy.c against NumPy: .npy files NumPy writes (random
dtype, shape, C/Fortran order, byte order) are read and re-written by the C
side and compared byte for byte with what NumPy has and would write; the C
printer's output is compared with str(arr) for a few hundred random arrays
and a set of hand-picked hard cases; malformed and unsupported files must be
rejected with a message naming the problem; the data sources are checked
against NumPy.

Builds its own driver (tests/unit/npy_tool.c) into $BUILD/npy_tool.  Run
from the repository root with /usr/bin/python3 (needs numpy).  Prints TAP.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

BUILD = os.environ.get("BUILD", "build")
TOOL = os.path.join(BUILD, "npy_tool")
SEED = int(os.environ.get("NPY_SEED", "20240611"))

results = []


def check(ok, what, details=()):
    results.append(bool(ok))
    print("%s %d - %s" % ("ok" if ok else "not ok", len(results), what))
    for line in ([] if ok else list(details)[:12]):
        for part in str(line).splitlines():
            print("#   " + part)
    sys.stdout.flush()


def build_tool():
    os.makedirs(BUILD, exist_ok=True)
    cc = os.environ.get("CC", "gcc").split()   # e.g. CC="gcc -fsanitize=address"
    cmd = cc + ["-std=c11", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE", "-Igen",
           "tests/unit/npy_tool.c", "gen/npy.c", "gen/util.c", "gen/dtype.c",
           "-lm", "-o", TOOL]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    check(proc.returncode == 0, "build the npy_tool driver", [proc.stderr])
    return proc.returncode == 0


def tool(*args):
    proc = subprocess.run([TOOL] + list(args), capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise RuntimeError("npy_tool %s failed: %s" % (args[0], proc.stderr))
    return proc.stdout


def tool_print(paths):
    """npy_format output per file (or 'error ...')."""
    out = tool("print", *paths)
    texts = []
    pos = 0
    for _ in paths:
        if out.startswith("error", pos):
            end = out.index("\n", pos)
            texts.append(out[pos:end])
            pos = end + 1
        else:
            end = out.index("\n<<<end>>>\n", pos)
            texts.append(out[pos:end])
            pos = end + len("\n<<<end>>>\n")
    return texts


DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
          "uint64", "float32", "float64", "float16"]


def random_shape(rng):
    rank = int(rng.choice([0, 1, 1, 2, 2, 2, 3, 3, 4, 5]))
    if rng.random() < 0.1:
        # big enough to be summarised
        dims = [int(d) for d in rng.integers(3, 15, size=max(rank, 2))]
        while int(np.prod(dims)) <= 1000:
            dims[int(rng.integers(len(dims)))] *= 2
        return tuple(dims)
    top = 8 if rank <= 2 else 4
    dims = [int(d) for d in rng.integers(1, top + 1, size=rank)]
    if rank and rng.random() < 0.05:
        dims[int(rng.integers(rank))] = 0
    return tuple(dims)


def random_floats(rng, dtype, size):
    style = int(rng.integers(9))
    if style == 0:
        x = rng.normal(size=size)
    elif style == 1:   # a few decimals, the common case in real data
        x = np.round(rng.uniform(-100, 100, size=size), int(rng.integers(0, 4)))
    elif style == 2:   # integers as floats
        x = rng.integers(-1000, 1000, size=size).astype(np.float64)
    elif style == 3:   # wide magnitudes: scientific notation
        x = rng.normal(size=size) * 10.0 ** rng.integers(-12, 12, size=size)
    elif style == 4:   # one scale, maybe large or small
        x = rng.normal(size=size) * 10.0 ** int(rng.integers(-8, 12))
    elif style == 5:   # specials mixed in
        x = rng.normal(size=size) * 10.0 ** int(rng.integers(-3, 5))
        specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0])
        mask = rng.random(size) < 0.3
        x[mask] = rng.choice(specials, size=int(mask.sum()))
    elif style == 6:   # dyadic values: exact ties at the 8th decimal
        x = rng.integers(-4096, 4096, size=size) / 2.0 ** int(rng.integers(0, 12))
    elif style == 7:   # large float32 integers (ulp >= 2) and near 1e8
        x = rng.integers(16777216, 100000000, size=size).astype(np.float64)
        x[rng.random(size) < 0.5] *= -1
    else:              # uniform like random:SEED
        x = rng.uniform(-10, 10, size=size)
    return x.astype(dtype)


def random_array(rng, dtype):
    shape = random_shape(rng)
    size = int(np.prod(shape)) if shape else 1
    dt = np.dtype(dtype)
    if dt.kind == "b":
        data = rng.random(size) < 0.5
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        style = int(rng.integers(3))
        if style == 0:
            data = rng.integers(info.min, info.max, size=size, dtype=dt, endpoint=True)
        elif style == 1:
            low = max(int(info.min), -1000)
            data = rng.integers(low, 1000, size=size).astype(dt)
        else:
            data = rng.integers(0, 10, size=size).astype(dt)
    else:
        data = random_floats(rng, dt, size)
    return data.reshape(shape)


def store_variant(rng, arr):
    """The array as numpy would be asked to save it: maybe Fortran order,
    maybe the other byte order."""
    if arr.dtype.itemsize > 1 and rng.random() < 0.4:
        arr = arr.astype(arr.dtype.newbyteorder(">"))
    if arr.ndim > 1 and rng.random() < 0.4:
        arr = np.asfortranarray(arr)
    return arr


def native_c(arr):
    out = np.array(arr, order="C")   # ascontiguousarray makes 0-d arrays 1-d
    if out.dtype.byteorder == ">":
        out = out.astype(out.dtype.newbyteorder("<"))
    return out


def saved_bytes(arr, path):
    np.save(path, arr)
    with open(path, "rb") as f:
        return f.read()


def test_round_trip_and_print(tmp, rng):
    cases = []
    for i in range(440):
        dtype = DTYPES[i % len(DTYPES)]
        arr = store_variant(rng, random_array(rng, dtype))
        path = os.path.join(tmp, "case%d.npy" % i)
        np.save(path, arr)
        cases.append((dtype, arr, path, os.path.join(tmp, "out%d.npy" % i)))

    args = []
    for _, _, path, out in cases:
        args += [path, out]
    status = tool("copy", *args).splitlines()
    failures = {d: [] for d in DTYPES}
    for (dtype, arr, path, out), line in zip(cases, status):
        if line != "ok":
            failures[dtype].append("%s %s: %s" % (arr.dtype.str, arr.shape, line))
            continue
        back = np.load(out)
        expect = native_c(arr)
        same = (back.dtype == expect.dtype and back.shape == expect.shape
                and back.tobytes() == expect.tobytes())
        with open(out, "rb") as f:
            written = f.read()
        if not same:
            failures[dtype].append("%s %s fortran=%s: data differs" %
                                   (arr.dtype.str, arr.shape, np.isfortran(arr)))
        elif written != saved_bytes(expect, os.path.join(tmp, "ref.npy")):
            failures[dtype].append("%s %s: file bytes differ from np.save" %
                                   (arr.dtype.str, arr.shape))
    for dtype in DTYPES:
        n = sum(1 for c in cases if c[0] == dtype)
        check(not failures[dtype], "read+write %d random %s .npy files (byte orders, "
              "C/Fortran, rank 0..5, empty) equal numpy" % (n, dtype), failures[dtype])

    texts = tool_print([c[2] for c in cases])
    failures = {d: [] for d in DTYPES}
    for (dtype, arr, _, _), text in zip(cases, texts):
        expect = str(arr)
        if text != expect:
            failures[dtype].append("%s %s\nnumpy:\n%s\nbcgen:\n%s" %
                                   (arr.dtype.str, arr.shape, expect, text))
    for dtype in DTYPES:
        n = sum(1 for c in cases if c[0] == dtype)
        check(not failures[dtype], "npy_format equals str(arr) for %d random %s arrays" %
              (n, dtype), failures[dtype])


def hard_cases():
    f4, f8 = np.float32, np.float64
    return [
        np.array([99999992.0, 16777218.0, -33554436.0], f4),   # exact whole digits
        np.array([99999992.0], f4),
        np.array([0.1, 1.2345678e-5], f4),                      # padded precision
        np.array([0.1, 1.23456789e-5], f8),
        np.array([0.001953125, 0.005859375, 0.5]),              # ties at 8 decimals
        np.array([1e-5, 1e-100, 1e10]),                         # 3-digit exponents
        np.array([np.nan, 1e-300, 1e300]),
        np.array([np.nan, -np.inf]),
        np.array([np.nan, np.inf], f4),
        np.array([-0.0, 0.0]),
        np.array([1e-4, 0.5], f4),                              # f32 1e-4 < 1e-4 in f64
        np.array([2.0 ** -149, 1.0], f4),                       # subnormal float32
        np.array([5e-324, 1.0]),                                 # subnormal float64
        np.array([1.7976931348623157e308, -1.0]),
        np.array([3.4028235e38], f4),
        np.array([2.0 ** 60, 2.0 ** 63]),                        # powers of two
        np.array([2.0 ** 90], f4),
        np.arange(100, dtype=f8) / 7,                            # wraps lines
        np.arange(30, dtype=f4).reshape(2, 3, 5) * 1e7,
        np.arange(3000, dtype=f8).reshape(10, 300) * 0.001,       # summarised
        np.arange(2000, dtype=np.int64).reshape(2, 10, 100) - 1000,
        np.ones((2, 2, 2, 2, 2, 2, 2, 2, 2, 2), np.int8),       # rank 10, summary by size
        np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max]),
        np.array([np.iinfo(np.uint64).max, 0], np.uint64),
        np.arange(200) % 3 == 0,                                  # bools wrap
        np.array(True), np.array(False),
        np.array(-7, np.int8), np.array(18446744073709551615, np.uint64),
        np.array(0.1, f4), np.array(1e16), np.array(1e-5, f4), np.array(-0.0),
        np.array(123456789012345.0), np.array(np.nan), np.array(-np.inf, f4),
        np.array(99999992.0, f4), np.array(3e15, f4), np.array(1.5e-300),
        np.zeros((0,)), np.zeros((2, 0, 3), np.int16), np.zeros((0, 5), bool),
        np.arange(1001, dtype=np.uint8),
        np.arange(7 * 7 * 7 * 3, dtype=np.int16).reshape(7, 7, 7, 3),
    ]


def test_hard_cases(tmp):
    arrays = hard_cases()
    paths = []
    for i, arr in enumerate(arrays):
        path = os.path.join(tmp, "hard%d.npy" % i)
        np.save(path, arr)
        paths.append(path)
    failures = []
    for arr, text in zip(arrays, tool_print(paths)):
        if text != str(arr):
            failures.append("%s %s\nnumpy:\n%s\nbcgen:\n%s" % (arr.dtype, arr.shape, str(arr), text))
    check(not failures, "npy_format equals str(arr) for %d hand-picked hard cases "
          "(ties, subnormals, exact whole digits, 3-digit exponents, specials, summaries)"
          % len(arrays), failures)


def test_rejected(tmp):
    cases = [
        ("complex64", np.ones(3, np.complex64), "'<c8'"),
        ("complex128", np.ones(3, np.complex128), "'<c16'"),
        ("unicode", np.array(["ab", "c"]), "'<U2'"),
        ("bytes", np.array([b"ab"]), "'|S2'"),
        ("datetime", np.array(["2020-01-01"], "datetime64[D]"), "'<M8[D]'"),
        ("structured", np.zeros(2, [("a", "<f4"), ("b", "<i4")]), "structured"),
        ("longdouble", np.ones(2, np.longdouble), "'<f16'"),
    ]
    failures = []
    paths = []
    for name, arr, _ in cases:
        path = os.path.join(tmp, "bad_%s.npy" % name)
        np.save(path, arr)
        paths.append(path)
    obj = os.path.join(tmp, "bad_object.npy")
    np.save(obj, np.array([1, "x"], dtype=object), allow_pickle=True)
    paths.append(obj)
    cases.append(("object", None, "'|O'"))
    args = []
    for p in paths:
        args += [p, os.path.join(tmp, "never.npy")]
    lines = tool("copy", *args).splitlines()
    for (name, _, needle), line in zip(cases, lines):
        # BCG_ERR_IO is 10 in runtime/bcgen.h
        if not (line.startswith("error 10:") and needle in line and "unsupported" in line):
            failures.append("%s: %s" % (name, line))
    check(not failures and len(lines) == len(cases),
          "%d unsupported dtypes rejected with BCG_ERR_IO naming the descr" % len(cases), failures)

    # malformed variants of a valid file
    good = saved_bytes(np.arange(6, dtype="<i4").reshape(2, 3), os.path.join(tmp, "good.npy"))
    header_len = good[8] | good[9] << 8
    header = good[10:10 + header_len]
    data = good[10 + header_len:]

    def with_header(text):
        raw = text.encode("latin1")
        return b"\x93NUMPY\x01\x00" + bytes([len(raw) & 255, len(raw) >> 8]) + raw + data

    bad = [
        ("bad magic", b"\x93NUMPZ" + good[6:], "magic"),
        ("bad version", good[:6] + b"\x04\x00" + good[8:], "version 4.0"),
        ("header beyond file", good[:8] + b"\xff\x7f" + good[10:], "past the end"),
        ("truncated data", good[:-3], "truncated"),
        ("empty file", b"", "truncated"),
        ("missing shape", with_header("{'descr': '<i4', 'fortran_order': False, }\n"), "shape"),
        ("bad shape text", with_header("{'descr': '<i4', 'fortran_order': False, 'shape': (2, x), }\n"),
         "shape"),
        ("negative dim", with_header("{'descr': '<i4', 'fortran_order': False, 'shape': (-2, 3), }\n"),
         "negative"),
        ("bad order", with_header("{'descr': '<i4', 'fortran_order': maybe, 'shape': (2, 3), }\n"),
         "fortran_order"),
        ("huge shape", with_header("{'descr': '<i4', 'fortran_order': False, "
                                   "'shape': (4294967296, 4294967296), }\n"), "2^63"),
        ("big but counted", with_header("{'descr': '<f8', 'fortran_order': False, "
                                        "'shape': (1000000, 1000000), }\n"), "NPY_MAX_BYTES"),
    ]
    failures = []
    paths = []
    for name, raw, _ in bad:
        path = os.path.join(tmp, "mal_%s.npy" % name.replace(" ", "_"))
        with open(path, "wb") as f:
            f.write(raw)
        paths += [path, os.path.join(tmp, "never.npy")]
    lines = tool("copy", *paths).splitlines()
    for (name, _, needle), line in zip(bad, lines):
        if not (line.startswith("error") and needle in line):
            failures.append("%s: %s" % (name, line))
    check(not failures and len(lines) == len(bad),
          "%d malformed files rejected with a message saying what is wrong" % len(bad), failures)
    # control: the same header rebuilt by with_header must load
    rebuilt = os.path.join(tmp, "rebuilt.npy")
    with open(rebuilt, "wb") as f:
        f.write(with_header(header.decode("latin1")))
    line = tool("copy", rebuilt, os.path.join(tmp, "r2.npy")).strip()
    check(line == "ok", "a rebuilt well-formed header is accepted (control)", [line])


def test_sources(tmp):
    failures = []
    shape = (3, 5, 7)
    n = int(np.prod(shape))
    for dtype in DTYPES:
        for source in ["range", "ones", "zeros"]:
            out = os.path.join(tmp, "fill.npy")
            line = tool("fill", dtype, "3,5,7", source, out).strip()
            if line != "ok":
                failures.append("%s %s: %s" % (dtype, source, line))
                continue
            got = np.load(out)
            if source == "range":
                base = np.arange(n, dtype=np.int64)
                expect = (base % 2 == 1) if dtype == "bool" else base.astype(dtype)
            elif source == "ones":
                expect = np.ones(n, dtype)
            else:
                expect = np.zeros(n, dtype)
            expect = expect.reshape(shape)
            if got.dtype != np.dtype(dtype) or got.tobytes() != expect.tobytes():
                failures.append("%s %s: %s" % (dtype, source, got.ravel()[:10]))
    # range wraps like a C conversion: 300 elements of int8 / uint8
    for dtype in ["int8", "uint8"]:
        out = os.path.join(tmp, "wrap.npy")
        tool("fill", dtype, "300", "range", out)
        if np.load(out).tobytes() != np.arange(300).astype(dtype).tobytes():
            failures.append("%s range does not wrap like numpy's astype" % dtype)
    check(not failures, "range/ones/zeros for every dtype equal numpy's arange/ones/zeros",
          failures)

    failures = []
    for dtype in DTYPES:
        a = os.path.join(tmp, "r1.npy")
        b = os.path.join(tmp, "r2.npy")
        c = os.path.join(tmp, "r3.npy")
        tool("fill", dtype, "4000", "random:7", a)
        tool("fill", dtype, "4000", "random:7", b)
        tool("fill", dtype, "4000", "random:8", c)
        x, y, z = np.load(a), np.load(b), np.load(c)
        if x.tobytes() != y.tobytes():
            failures.append("%s: same seed, different data" % dtype)
        if x.tobytes() == z.tobytes():
            failures.append("%s: different seeds, same data" % dtype)
        kind = np.dtype(dtype).kind
        lo, hi = {"b": (0, 1), "i": (-100, 100), "u": (0, 200), "f": (-10, 10)}[kind]
        xs = x.astype(np.float64)
        if xs.min() < lo or xs.max() > hi or (kind == "f" and xs.max() >= 10):
            failures.append("%s: values outside [%s, %s]: %s..%s" % (dtype, lo, hi, xs.min(), xs.max()))
        if kind != "f" and (xs.min() != lo or xs.max() != hi):
            failures.append("%s: 4000 draws do not reach both ends of [%s, %s]" % (dtype, lo, hi))
        distinct = 3900 if x.dtype.itemsize > 2 else 1500   # f16 has 11 bits: repeats
        if kind == "f" and (abs(xs.mean()) > 0.5 or len(np.unique(x)) < distinct):
            failures.append("%s: not uniform-looking: mean %s" % (dtype, xs.mean()))
    check(not failures, "random:SEED is deterministic, seed-dependent and in its documented range",
          failures)

    line = tool("fill", "f32", "3", "linspace", os.path.join(tmp, "x.npy")).strip()
    check(line.startswith("error") and "range, ones, zeros, random:SEED" in line,
          "an unknown source names the accepted ones", [line])


def main():
    if not build_tool():
        print("# cannot continue without the driver")
        return 1
    rng = np.random.default_rng(SEED)
    tmp = tempfile.mkdtemp(prefix="bcgen_npy_")
    try:
        test_round_trip_and_print(tmp, rng)
        test_hard_cases(tmp)
        test_rejected(tmp)
        test_sources(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("1..%d" % len(results))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
