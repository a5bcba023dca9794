#!/usr/bin/python3
"""bf16_numpy.py - bfloat16 kernels against a NumPy emulation of bfloat16.

NumPy has no bfloat16, so the oracle here emulates it the way
docs/semantics.md defines it: a bf16 value is the top half of a float32;
every operation on bf16 is computed in float32 and its result rounded to
bf16 (to nearest even, by bit manipulation on uint32 views; NaN kept and
made quiet; overflow to inf).  Promotion: bf16 with bool, i8 or u8 stays
bf16, with f16 or f32 gives f32, with i32 gives f64; a Python float literal
next to bf16 is rounded to float32 and then to bf16.

Random expressions over a, b (bf16, broadcasting), f (f32), h (f16) and
i (i8), with edge values (NaN, +-inf, +-0, subnormals, the largest finite
bf16, ties), run through `bcgen run` (the JIT), `bcgen run --reference` and,
for every tenth case, `--backend cc`; results must equal the emulation bit
for bit (any NaN matching any NaN).  Data goes in and out as .npy files
with descr '|V2', the layout np.save gives ml_dtypes' bfloat16.

  BUILD=build /usr/bin/python3 tests/diff/bf16_numpy.py [--seed N] [--count N]
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile

import numpy as np

BCGEN = os.path.join(os.environ.get("BUILD", "build"), "bcgen")


# ---- bfloat16 emulation ------------------------------------------------------

def bf16_round(x):
    """float32 array -> float32 array of the nearest bf16 values."""
    x = np.asarray(x, np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    k16, one, half, quiet = np.uint64(16), np.uint64(1), np.uint64(0x7FFF), np.uint64(0x40)
    r = ((u + half + ((u >> k16) & one)) >> k16) << k16
    nan = np.isnan(x)
    r = np.where(nan, ((u >> k16) | quiet) << k16, r)
    return r.astype(np.uint32).view(np.float32)


def bf16_bits(x):
    return (bf16_round(x).view(np.uint32) >> np.uint32(16)).astype(np.uint16)


def from_bits(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


class Val:
    """A value of the emulation: an array in its dtype's NumPy carrier
    (bf16 as float32 holding bf16 values), or a weak Python literal."""
    def __init__(self, dtype, data):
        self.dtype, self.data = dtype, data


FLOAT_RANK = {"bf16": 1, "f16": 1, "f32": 2, "f64": 3}


def promote(x, y):
    if x.dtype == "lit" or y.dtype == "lit":   # a float literal: weak next to floats
        other = y.dtype if x.dtype == "lit" else x.dtype
        return other if other in FLOAT_RANK else "f64"
    a, b = x.dtype, y.dtype
    if a == b:
        return a
    pair = {a, b}
    if pair == {"bf16", "f16"}:
        return "f32"
    if "bf16" in pair:
        other = (pair - {"bf16"}).pop()
        return {"bool": "bf16", "i8": "bf16", "u8": "bf16", "i16": "f32", "f32": "f32",
                "f64": "f64", "i32": "f64"}[other]
    return str(np.result_type(NP[a], NP[b]).name).replace("float", "f").replace("int", "i")


NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8, "bool": np.bool_,
      "i32": np.int32}


def convert(v, t):
    """V as dtype T (bf16 carried as float32)."""
    if v.dtype == "lit":
        x = np.float32(v.data) if t in ("bf16", "f32") else v.data
        if t == "bf16":
            return bf16_round(np.asarray(x, np.float32))
        return np.asarray(x, NP[t])
    d = v.data
    if t == v.dtype:
        return d
    if t == "bf16":
        if v.dtype == "f64":   # through float, as PyTorch and ml_dtypes
            d = d.astype(np.float32)
        return bf16_round(np.asarray(d).astype(np.float32))
    if v.dtype == "bf16":
        return d.astype(NP[t]) if NP[t] != np.int32 else trunc_int(d)
    return d.astype(NP[t])


def trunc_int(d):
    t = np.trunc(d.astype(np.float64))
    t = np.where(np.isnan(t), 0, np.clip(t, -2**31, 2**31 - 1))
    return t.astype(np.int32)


def compute(t, fn, *args):
    """FN over ARGS (arrays of type T's carrier), rounded to T."""
    with np.errstate(all="ignore"):
        if t == "bf16":
            return bf16_round(fn(*[a.astype(np.float32) for a in args]).astype(np.float32))
        return np.asarray(fn(*args)).astype(NP[t])


BINARY = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}


def minimum(x, y):
    return np.where(np.isnan(x) | (x < y), x, y)


def maximum(x, y):
    return np.where(np.isnan(x) | (x > y), x, y)


def evaluate(node, env):
    kind = node[0]
    if kind == "operand":
        return env[node[1]]
    if kind == "lit":
        return Val("lit", node[1])
    op = node[1]
    args = [evaluate(a, env) for a in (node[2:3] if op == "cast" else node[2:])]
    if any(a.dtype == "bool" for a in args) and op != "cast":
        raise KeyError("bool arithmetic: not emulated")
    if op != "cast" and all(a.dtype == "lit" for a in args):
        if kind == "bin" and op in ("+", "-", "*", "/"):   # folded with Python's arithmetic
            try:
                return Val("lit", {"+": float.__add__, "-": float.__sub__, "*": float.__mul__,
                                   "/": float.__truediv__}[op](*[float(a.data) for a in args]))
            except ZeroDivisionError:
                raise KeyError("division by a zero literal")
        if kind == "un" and op in ("neg", "abs"):
            return Val("lit", -args[0].data if op == "neg" else abs(args[0].data))
        raise KeyError("a literal-only subtree: not emulated")
    if kind == "bin":
        t = promote(*args)
        if op == "/" and t not in FLOAT_RANK:
            t = "f64"
        x, y = (convert(a, t) for a in args)
        if op in BINARY:
            return Val(t, compute(t, BINARY[op], x, y))
        if op in ("<", ">", "=="):
            with np.errstate(all="ignore"):
                f = {"<": np.less, ">": np.greater, "==": np.equal}[op]
                return Val("bool", f(x.astype(np.float64), y.astype(np.float64)))
        f = minimum if op == "minimum" else maximum
        return Val(t, compute(t, f, x, y))
    (a,) = args
    t = a.dtype if a.dtype != "lit" else "f64"
    if op == "sqrt" and t == "i8":   # dtype_float_for, NumPy's: an int8's sqrt is f16
        return Val("f16", compute("f16", np.sqrt, a.data.astype(np.float16)))
    if op == "neg":
        return Val(t, -convert(a, t))
    if op == "abs":
        return Val(t, np.abs(convert(a, t)))
    if op == "sqrt":
        return Val(t, compute(t, np.sqrt, convert(a, t)))
    if op == "cast":
        return Val(node[2 + 1], convert(a, node[2 + 1]))
    raise AssertionError(op)


def text(node):
    kind = node[0]
    if kind == "operand":
        return node[1]
    if kind == "lit":
        return repr(node[1])
    if kind == "bin":
        if node[1] in ("minimum", "maximum"):
            return "%s(%s, %s)" % (node[1], text(node[2]), text(node[3]))
        return "(%s %s %s)" % (text(node[2]), node[1], text(node[3]))
    if node[1] == "neg":
        return "(-%s)" % text(node[2])
    if node[1] == "cast":
        return "%s(%s)" % (node[3], text(node[2]))
    return "%s(%s)" % (node[1], text(node[2]))


def operand_type(node, env):
    return evaluate(node, env).dtype


# ---- the cases ---------------------------------------------------------------

EDGES = np.array([0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 3.3895314e38, -3.3895314e38,
                  1e-40, -9.2e-41, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 255.5, 0.1, 65504.0,
                  1e30, 2 ** -126], np.float64)


def random_values(rng, nprng, shape, dtype):
    n = int(np.prod(shape)) if shape else 1
    style = rng.random()
    if dtype == "i8":
        return nprng.integers(-128, 128, size=shape).astype(np.int8)
    if style < 0.3:
        v = nprng.choice(EDGES, size=n).reshape(shape)
    elif style < 0.6:
        v = nprng.integers(-64, 64, size=shape) / 8.0
    else:
        v = nprng.uniform(-1, 1, size=shape) * 10.0 ** nprng.integers(-8, 8, size=shape)
    with np.errstate(all="ignore"):
        if dtype == "bf16":
            return bf16_round(np.asarray(v, np.float32))
        return np.asarray(v).astype(NP[dtype])


def random_tree(rng, depth):
    if depth == 0 or rng.random() < 0.25:
        if rng.random() < 0.15:
            return ("lit", rng.choice([0.5, 0.1, 3.0, -2.25, 1e-3, 300.0, 1e38]))
        return ("operand", rng.choice("aabbfhi"))
    r = rng.random()
    if r < 0.6:
        op = rng.choice(["+", "-", "*", "/", "minimum", "maximum", "+", "*"])
        return ("bin", op, random_tree(rng, depth - 1), random_tree(rng, depth - 1))
    if r < 0.7:
        return ("bin", rng.choice(["<", ">", "=="]), random_tree(rng, depth - 1),
                random_tree(rng, depth - 1))
    if r < 0.85:
        return ("un", rng.choice(["neg", "abs", "sqrt"]), random_tree(rng, depth - 1))
    return ("un", "cast", random_tree(rng, depth - 1), rng.choice(["bf16", "f32", "bf16"]))


def save(path, dtype, data):
    if dtype == "bf16":
        np.save(path, bf16_bits(data).view("V2"))
    else:
        np.save(path, data)


def load(path, dtype):
    x = np.load(path)
    if dtype == "bf16":
        assert x.dtype == np.dtype("V2"), x.dtype
        return from_bits(x.view(np.uint16))
    return x


def same(got, want, dtype):
    if dtype in ("bf16", "f16", "f32", "f64"):
        g = np.asarray(got, np.float64)
        w = np.asarray(want, np.float64)
        nan = np.isnan(g) & np.isnan(w)
        eq = (g == w) & (np.signbit(g) == np.signbit(w))
        return bool(np.all(nan | eq))
    return np.array_equal(got, want)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=400)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    nprng = np.random.default_rng(args.seed)
    shapes = [((3, 17), (17,), (3, 1), (1,), (17,)), ((2, 3, 40), (3, 1), (40,), (2, 1, 1), ()),
              ((4096,), (4096,), (4096,), (1,), (4096,))]
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in range(args.count):
            sa, sb, sf, sh, si = shapes[case % len(shapes)]
            kinds = {"a": ("bf16", sa), "b": ("bf16", sb), "f": ("f32", sf), "h": ("f16", sh),
                     "i": ("i8", si)}
            env, specs = {}, []
            for name, (dtype, shape) in kinds.items():
                data = random_values(rng, nprng, shape, dtype)
                env[name] = Val(dtype, data)
                path = os.path.join(tmp, name + ".npy")
                save(path, dtype, data)
                specs += ["-i", "%s=%s[%s]=%s" % (name, dtype, ",".join(map(str, shape)), path)]
            tree = random_tree(rng, 3)
            if tree[0] != "bin" and tree[0] != "un":
                tree = ("bin", "*", tree, ("operand", "a"))
            expr = text(tree)
            try:
                want = evaluate(tree, env)
            except KeyError:
                continue
            if want.dtype == "lit":
                continue
            results = []
            modes = [[], ["--reference"]] + ([["--backend", "cc"]] if case % 10 == 0 else [])
            problem = None
            for mode in modes:
                out = os.path.join(tmp, "out.npy")
                r = subprocess.run([BCGEN, "run", expr] + specs + mode + ["-o", out],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    problem = "%s failed: %s" % (mode or "jit", r.stderr.strip())
                    break
                got = load(out, want.dtype)
                expected = np.broadcast_to(want.data, got.shape) if got.shape else want.data
                if not same(got, expected, want.dtype):
                    bad = np.flatnonzero(~np.isclose(np.asarray(got, np.float64).ravel(),
                                                     np.asarray(expected, np.float64).ravel(),
                                                     rtol=0, atol=0, equal_nan=True))[:3]
                    problem = "%s: %s result differs at %s: got %s want %s" % (
                        mode or "jit", want.dtype, bad, np.asarray(got).ravel()[bad],
                        np.asarray(expected).ravel()[bad])
                    break
                results.append(got)
            if problem:
                failed += 1
                print("not ok %d - case %d: %s  (%s)" % (case + 1, case, expr, problem))
            else:
                passed += 1
                print("ok %d - case %d: %s -> %s" % (case + 1, case, expr, want.dtype))
    print("1..%d" % args.count)
    print("# bf16_numpy seed %d: %d passed, %d failed" % (args.seed, passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
