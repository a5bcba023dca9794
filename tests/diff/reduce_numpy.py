#!/usr/bin/python3
"""reduce_numpy.py - differential test: bcgen's reductions (issue 12) against NumPy.

Seeded random cases: an expression over one or two broadcast operands of
every dtype (ranks 0-4, size-1 and size-0 dimensions), reduced with sum,
prod, min, max, mean, any or all to a target shape that broadcasts to the
result (keepdims shapes, dropped leading dimensions, an operand's own shape
with --to, rank 0), sometimes into a strided output view and cast to an
output dtype.  Each case runs through `bcgen run` with the JIT, the
reference evaluator, three threads and the cc backend, and is compared with
np.<op>(x, axis=..., keepdims=True) reshaped to the target:
  - dtypes exactly as NumPy gives them (accumulators i64/u64, mean in f64);
  - integers and bools identical (sums and products wrap as NumPy's do);
  - float sums and means against the exact sum (math.fsum): bcgen's error
    at most NumPy's pairwise error, or half an ulp of the result, plus
    n * 2**-52 * sum|x| (the double accumulation);
  - products within a relative 1e-5 (f32) or 1e-12 (f64) of NumPy's;
  - min and max exact (NaN where NumPy has NaN; -0.0 equals 0.0);
  - every run of a case gives the same bytes (threads change nothing);
  - empty reductions: sum 0, prod 1, any False, all True, mean NaN, and
    min/max over an empty axis exit 1 as NumPy raises.

  reduce_numpy.py [--seed S] [--count N] [--case I]
"""
import argparse
import math
import os
import random
import shutil
import subprocess
import sys

import numpy as np

DTYPES = ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "f16"]
NP = {"bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
      "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
      "f32": np.float32, "f64": np.float64, "f16": np.float16}
NAME = {np.dtype(v): k for k, v in NP.items()}
REDUCTIONS = ["sum", "prod", "min", "max", "mean", "any", "all"]
EXPRESSIONS = {1: ["a", "a * a", "-a"], 2: ["a + b", "a * b", "a - b", "where(a > b, a, b)",
                                            "maximum(a, b)"]}


def numpy_value(expr, a, b):
    with np.errstate(all="ignore"):
        if expr == "a":
            return a
        if expr == "a * a":
            return a * a
        if expr == "-a":
            return -a if a.dtype != np.bool_ else None
        if expr == "a + b":
            return a + b
        if expr == "a * b":
            return a * b
        if expr == "a - b":
            return a - b if not (a.dtype == np.bool_ and b.dtype == np.bool_) else None
        if expr == "where(a > b, a, b)":
            return np.where(a > b, a, b)
        if expr == "maximum(a, b)":
            return np.maximum(a, b)
    raise ValueError(expr)


def random_data(rng, dt, shape):
    n = int(np.prod(shape)) if shape else 1
    if dt == "bool":
        v = np.array([rng.random() < 0.5 for _ in range(n)], dtype=np.bool_)
    elif dt[0] == "f":
        pool = [rng.uniform(-3, 3) for _ in range(n)]
        if rng.random() < 0.2:  # large and cancelling values
            big = 1e8 if dt != "f16" else 3e4   # f16: large, but finite
            pool = [rng.choice([big, -big, 3.0, -3.0, 1e-3]) * rng.uniform(0.5, 1.5) for _ in range(n)]
        if rng.random() < 0.05 and n:
            pool[rng.randrange(n)] = rng.choice([float("nan"), float("inf"), -float("inf")])
        v = np.array(pool, dtype=NP[dt])
    else:
        info = np.iinfo(NP[dt])
        lo, hi = (info.min, info.max) if rng.random() < 0.5 else (max(info.min, -5), min(info.max, 5))
        v = np.array([rng.randint(lo, hi) for _ in range(n)], dtype=NP[dt])
    return v.reshape(shape)


def make_case(seed, index):
    rng = random.Random("reduce-%d-%d" % (seed, index))
    rank = rng.randint(0, 4)
    dims = [rng.choice([1, 2, 3, 4, 5, 7, 16, 33] + ([0] if rng.random() < 0.08 else [])) for _ in range(rank)]
    if rng.random() < 0.1 and rank:
        dims[-1] = rng.choice([300, 1000, 2049])
    count = rng.choice([1, 2])
    shapes = [list(dims)]
    if count == 2:
        r = rng.randint(0, rank)
        shapes.append([1 if rng.random() < 0.3 else d for d in dims[rank - r:]])
        if rng.random() < 0.5:
            shapes.reverse()
    dt = rng.choice(DTYPES)
    dts = [dt, dt if rng.random() < 0.6 else rng.choice(DTYPES)][:count]
    expr = rng.choice(EXPRESSIONS[count])
    op = rng.choice(REDUCTIONS)
    result = list(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    # the target: each result dimension kept or reduced (size 1), leading ones dropped
    target = [d if rng.random() < 0.5 else 1 for d in result]
    drop = rng.randint(0, len(target)) if rng.random() < 0.4 else 0
    target = target[drop:]
    to = None
    if count == 2 and rng.random() < 0.25:
        to = rng.randrange(2)
        target = list(shapes[to])
    flags = []
    if rng.random() < 0.25 and target:
        order = list(range(len(target)))
        rng.shuffle(order)
        strides = [0] * len(target)
        step = 1
        for d in reversed(order):
            strides[d] = step * (-1 if rng.random() < 0.3 else 1)
            step *= max(target[d], 1)
        flags += ["--out-strides", "[%s]" % ",".join(map(str, strides))]
    out_dtype = rng.choice(DTYPES) if rng.random() < 0.2 else None
    if out_dtype:
        flags += ["--out-dtype", out_dtype]
    return {"index": index, "shapes": shapes, "dtypes": dts, "expr": expr, "op": op,
            "result": result, "target": target, "to": to, "flags": flags, "out_dtype": out_dtype,
            "rng": rng}


def expected_of(case, arrays):
    # bcgen types a rank-0 operand as an array (strong), NumPy 1.24 by value:
    # compute in the promoted type of the operands' dtypes, as bcgen does
    t = np.result_type(*[a.dtype for a in arrays])
    if case["expr"] in ("a * a", "-a", "a"):
        t = arrays[0].dtype
    cast = [a.astype(t) for a in arrays]
    x = numpy_value(case["expr"], *(cast + [None] * (2 - len(cast))))
    if x is None:
        return "skip", None
    x = np.asarray(x)
    result, target = case["result"], case["target"]
    lead = len(result) - len(target)
    axes = tuple(d for d in range(len(result)) if d < lead or (target[d - lead] == 1 and result[d] != 1))
    op = case["op"]
    kind = x.dtype.kind
    try:
        with np.errstate(all="ignore"):
            if op == "sum":
                y = np.sum(x, axis=axes, keepdims=True)
            elif op == "prod":
                y = np.prod(x, axis=axes, keepdims=True)
            elif op == "min":
                y = np.min(x, axis=axes, keepdims=True)
            elif op == "max":
                y = np.max(x, axis=axes, keepdims=True)
            elif op == "mean":
                y = np.mean(x, axis=axes, keepdims=True) if x.size or True else None
            elif op == "any":
                y = np.any(x, axis=axes, keepdims=True)
            else:
                y = np.all(x, axis=axes, keepdims=True)
    except ValueError:
        return "error", None
    y = np.asarray(y).reshape(target)
    if kind in "iu" and op in ("sum", "prod"):
        y = y.astype(np.uint64 if kind == "u" else np.int64)
    if case["out_dtype"]:
        want = np.dtype(NP[case["out_dtype"]])
        if not np.can_cast(y.dtype, want, casting="same_kind"):
            return "type", None
        with np.errstate(all="ignore"):
            y = y.astype(want)
    return "ok", (x, axes, y)


def float_ok(got, want, x, axes, op, out_kind):
    """Sums and means against the exact sum; products against NumPy."""
    g = got.astype(np.float64).ravel()
    w = want.astype(np.float64).ravel()
    if op in ("sum", "mean") and out_kind == "f" and x.dtype.kind == "f":
        x64 = x.astype(np.float64)
        xm = np.moveaxis(x64, axes, tuple(range(len(axes)))) if axes else x64
        reduced = int(np.prod([x.shape[a] for a in axes])) if axes else 1
        cols = xm.reshape(reduced, -1) if reduced else np.zeros((0, g.size))
        n = cols.shape[0]
        for j in range(min(cols.shape[1], g.size)):
            col = cols[:, j]
            if not np.all(np.isfinite(col)):
                if not (np.isnan(g[j]) and np.isnan(w[j])) and g[j] != w[j]:
                    return "element %d: %r, NumPy %r (non-finite inputs)" % (j, g[j], w[j])
                continue
            exact = math.fsum(col.tolist())
            if op == "mean":
                exact = exact / n if n else float("nan")
                if n == 0:
                    if not np.isnan(g[j]):
                        return "element %d: mean of nothing is %r, want nan" % (j, g[j])
                    continue
            scale = math.fsum(abs(v) for v in col.tolist()) / (n if op == "mean" else 1)
            ulp = float(np.spacing(np.asarray(abs(exact), dtype=got.dtype))) if np.isfinite(exact) else 0.0
            bound = max(abs(w[j] - exact), 0.5 * ulp) + n * 2.0 ** -52 * scale + 1e-300
            if np.isinf(w[j]) and g[j] == w[j]:
                continue
            if not abs(g[j] - exact) <= bound:
                return "element %d: %r, exact %r, NumPy %r (bound %g)" % (j, g[j], exact, w[j], bound)
        return None
    rtol = {2: 4e-3, 4: 1e-5}.get(got.dtype.itemsize, 1e-12)
    with np.errstate(all="ignore"):
        same = (g == w) | (np.isnan(g) & np.isnan(w)) | (np.abs(g - w) <= rtol * np.abs(w))
    if not np.all(same):
        j = int(np.argmin(same))
        return "element %d: %r, NumPy %r" % (j, g[j], w[j])
    return None


def run_case(bcgen, seed, index, work):
    case = make_case(seed, index)
    rng = case["rng"]
    folder = os.path.join(work, "case-%d" % index)
    os.makedirs(folder, exist_ok=True)
    arrays = []
    cmd_ops = []
    names = ["a", "b"]
    for i, (s, dt) in enumerate(zip(case["shapes"], case["dtypes"])):
        data = random_data(rng, dt, s)
        arrays.append(data)
        path = os.path.join(folder, names[i] + ".npy")
        np.save(path, data)
        cmd_ops += ["-i", "%s=%s[%s]=%s" % (names[i], dt, ",".join(map(str, s)), path)]
    status, exp = expected_of(case, arrays)
    what = "case %d: %s %s -> %s [%s] %s" % (index, case["op"], case["expr"], case["target"],
                                             " ".join("%s%s" % (d, s) for d, s in zip(case["dtypes"], case["shapes"])),
                                             " ".join(case["flags"]))
    if status == "skip":
        return True, what + " (skipped: not NumPy-defined)", []
    target = ["--to", names[case["to"]]] if case["to"] is not None else ["--out-shape", "[%s]" % ",".join(map(str, case["target"]))]
    base = [bcgen, "run"] + cmd_ops + ["--reduce", case["op"]] + target + case["flags"]
    notes = []
    outputs = []
    for variant in ([], ["--reference"], ["--threads", "3"], ["--backend", "cc"]):
        out = os.path.join(folder, "out.npy")
        if os.path.exists(out):
            os.remove(out)
        cmd = base + ["-o", out] + variant + ["--", case["expr"]]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        line = " ".join(cmd)
        if status in ("error", "type"):
            if proc.returncode != 1 or not proc.stderr.strip():
                notes.append("NumPy rejects it (%s): want exit 1, got %d %r; %s" % (status, proc.returncode, proc.stderr[:200], line))
            continue
        if proc.returncode != 0:
            notes.append("exit %d: %s; %s" % (proc.returncode, proc.stderr.strip()[:300], line))
            continue
        if "reference evaluator" in proc.stderr and "--reference" not in variant:
            # a compiled kernel that fell back gives the right values slowly
            notes.append("the compiled kernel fell back: %s; %s" % (proc.stderr.strip()[:300], line))
        got = np.load(out)
        outputs.append(got.tobytes())
        x, axes, want = exp
        if got.dtype != want.dtype or list(got.shape) != list(want.shape):
            notes.append("got %s %s, want %s %s; %s" % (got.dtype, got.shape, want.dtype, want.shape, line))
            continue
        if got.dtype.kind == "f":
            problem = float_ok(got, want, x, axes, case["op"], "f")
        else:
            problem = None if np.array_equal(got, want) else "got %r, want %r" % (got.ravel()[:8], want.ravel()[:8])
        if problem:
            notes.append(problem + "; " + line)
    if len(set(outputs)) > 1:
        notes.append("the runs differ from each other (threads, backend or reference)")
    if not notes:
        shutil.rmtree(folder, ignore_errors=True)
    return not notes, what, notes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=400)
    ap.add_argument("--case", type=int)
    opts = ap.parse_args()
    build = os.environ.get("BUILD", "build")
    bcgen = os.path.abspath(os.path.join(build, "bcgen"))
    work = os.path.abspath(os.path.join(build, "diff-work", "reduce_numpy"))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    indices = [opts.case] if opts.case is not None else range(opts.count)
    print("1..%d" % len(indices))
    failed = 0
    for number, i in enumerate(indices, 1):
        ok, what, notes = run_case(bcgen, opts.seed, i, work)
        failed += not ok
        print("%s %d - %s" % ("ok" if ok else "not ok", number, what))
        for n in notes:
            print("# " + n)
    print("# reduce_numpy seed %d: %d passed, %d failed" % (opts.seed, len(indices) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
