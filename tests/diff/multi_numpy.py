#!/usr/bin/python3
"""multi_numpy.py - differential test: bcgen's programs of several outputs
(issue 12 part 3, 'y = a * b; s = y') against NumPy.

Seeded random programs of 2-4 statements over 1-3 broadcast operands of
mixed dtypes (ranks 0-3, size-1 and size-0 dimensions, strided and reversed
operand views).  A statement combines operands and the names of earlier
element-wise statements with + - * maximum minimum where abs and unary
minus; each output may be reduced (sum, prod, min, max, mean, any, all) to a
keepdims target or an operand's shape (--reduce NAME=OP --to NAME=OPERAND
or --out-shape NAME=SHAPE), cast on store (--out-dtype NAME=D, same-kind
casts, and sometimes a cast NumPy refuses, which must exit 1), and written
through a strided view (--out-strides NAME=S).  Each program runs through
`bcgen run` with the JIT, --reference, --threads 2..4 and (every fourth)
the cc backend; the runs must give the same bytes for every output, and each
output is compared with NumPy:
  - element-wise outputs: dtypes exactly, values exactly (NaN equal);
  - reductions: as tests/diff/reduce_numpy.py checks them (float sums and
    means against math.fsum, products within a relative bound, the rest
    exact);
  - min/max over an empty axis: exit 1, as NumPy raises.

  multi_numpy.py [--seed S] [--count N] [--case I] [--jobs J]
"""
import argparse
import concurrent.futures
import os
import random
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reduce_numpy as rn  # noqa: E402  (random_data, float_ok, NP, REDUCTIONS)

DTYPES = ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "f16"]
NAMES = ["a", "b", "c"]
STATEMENT_NAMES = ["y", "s", "t", "u"]


def promote(*arrays):
    t = np.result_type(*[x.dtype for x in arrays])
    return t, [x.astype(t) for x in arrays]


def apply(op, args):
    """NumPy's value of OP over ARGS, computed in the promotion of the
    arguments' dtypes (bcgen types every operand as an array); None when
    the combination is not one to test."""
    with np.errstate(all="ignore"):
        if op == "id":
            return args[0]
        if op == "neg":
            return None if args[0].dtype == np.bool_ else -args[0]
        if op == "abs":
            return None if args[0].dtype == np.bool_ else np.abs(args[0])
        t, (x, y) = promote(*args)
        if t == np.bool_ and op in ("+", "-", "*"):
            return None
        if op == "+":
            return x + y
        if op == "-":
            return x - y
        if op == "*":
            return x * y
        if op == "maximum":
            return np.maximum(x, y)
        if op == "minimum":
            return np.minimum(x, y)
        if op == "where":
            return np.where(x > y, x, y)
    raise ValueError(op)


def text_of(op, names):
    if op == "id":
        return names[0]
    if op == "neg":
        return "-%s" % names[0]
    if op == "abs":
        return "abs(%s)" % names[0]
    if op in ("maximum", "minimum"):
        return "%s(%s, %s)" % (op, names[0], names[1])
    if op == "where":
        return "where(%s > %s, %s, %s)" % (names[0], names[1], names[0], names[1])
    return "%s %s %s" % (names[0], op, names[1])


def view_strides(rng, shape):
    order = list(range(len(shape)))
    rng.shuffle(order)
    strides = [0] * len(shape)
    step = 1
    for d in reversed(order):
        strides[d] = step * (-1 if rng.random() < 0.3 else 1)
        step *= max(shape[d], 1)
    return strides


def reduction_of(op, x, target):
    """NumPy's reduction OP of X to TARGET (keepdims, reshaped), or 'error'."""
    result = list(x.shape)
    lead = len(result) - len(target)
    axes = tuple(d for d in range(len(result)) if d < lead or (target[d - lead] == 1 and result[d] != 1))
    kind = x.dtype.kind
    try:
        with np.errstate(all="ignore"):
            f = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max,
                 "mean": np.mean, "any": np.any, "all": np.all}[op]
            y = f(x, axis=axes, keepdims=True)
    except ValueError:
        return "error", None, axes
    y = np.asarray(y).reshape(target)
    if kind in "iub" and op in ("sum", "prod"):
        y = y.astype(np.uint64 if kind == "u" else np.int64)
    return "ok", y, axes


def make_case(seed, index, folder):
    rng = random.Random("multi-%d-%d" % (seed, index))
    rank = rng.randint(0, 3)
    dims = [rng.choice([1, 2, 3, 4, 5, 7, 16] + ([0] if rng.random() < 0.05 else [])) for _ in range(rank)]
    if rng.random() < 0.08 and rank:
        dims[-1] = rng.choice([300, 1000])
    count = rng.randint(1, 3)
    dtype = rng.choice(DTYPES)
    operands, arrays, specs, ops = [], {}, [], []
    # operands of one shape more often than not: every statement then
    # iterates over it, and the program fuses into one kernel
    same = rng.random() < 0.6
    for i in range(count):
        r = rank if same else rng.randint(0, rank)
        shape = list(dims) if same else [1 if rng.random() < 0.25 else d for d in dims[rank - r:]]
        dt = dtype if rng.random() < 0.6 else rng.choice(DTYPES)
        data = rn.random_data(rng, dt, shape)
        path = os.path.join(folder or "", NAMES[i] + ".npy")
        if folder:
            np.save(path, data)
        strides = view_strides(rng, shape) if shape and rng.random() < 0.2 else None
        specs += ["-i", "%s=%s[%s]%s=%s" % (NAMES[i], dt, ",".join(map(str, shape)),
                                            "@[%s]" % ",".join(map(str, strides)) if strides else "", path)]
        ops.append((NAMES[i], dt, shape, strides, data))
        operands.append(NAMES[i])
        arrays[NAMES[i]] = data
    # several reductions to one target (the backward pass: the gradients of
    # several operands): they fuse when they reduce the same dimensions
    multi = same and rng.random() < 0.3
    first_target = None
    statements, flags, outputs = [], [], []
    values = dict(arrays)   # name -> its value (before any cast on store)
    usable = list(operands)  # names a later statement may read
    for k in range(rng.randint(2, 4)):
        name = STATEMENT_NAMES[k]
        for _ in range(20):
            op = rng.choice(["id", "neg", "abs", "+", "-", "*", "maximum", "minimum", "where"])
            arity = 1 if op in ("id", "neg", "abs") else 2
            # later statements favour the earlier statements' names
            args = [rng.choice(usable[len(operands):] if len(usable) > len(operands) and rng.random() < 0.6
                               else usable) for _ in range(arity)]
            try:
                value = apply(op, [values[a] for a in args])
            except ValueError:
                value = None
            if value is not None:
                break
        else:
            op, args, value = "id", [operands[0]], values[operands[0]]
        value = np.asarray(value)
        statements.append("%s = %s" % (name, text_of(op, args)))
        out = {"name": name, "value": value, "reduce": None, "dtype": None, "strides": None}
        shape = list(value.shape)
        if rng.random() < (0.6 if multi else 0.35 if k == 0 or not same else 0.2):
            out["reduce"] = rng.choice(rn.REDUCTIONS)
            fits = [o for o in operands if len(arrays[o].shape) <= len(shape) and all(
                s == 1 or s == f for s, f in zip(reversed(arrays[o].shape), reversed(shape)))]
            if multi and first_target is not None and rng.random() < 0.85:
                target = list(first_target)
                flags += ["--out-shape", "%s=[%s]" % (name, ",".join(map(str, target)))]
            elif fits and rng.random() < 0.3:
                to = rng.choice(fits)
                target = list(arrays[to].shape)
                flags += ["--to", "%s=%s" % (name, to)]
            else:
                target = [d if rng.random() < 0.5 else 1 for d in shape]
                target = target[rng.randint(0, len(target)) if rng.random() < 0.4 else 0:]
                flags += ["--out-shape", "%s=[%s]" % (name, ",".join(map(str, target)))]
            flags += ["--reduce", "%s=%s" % (name, out["reduce"])]
            out["target"] = target
            if first_target is None:
                first_target = target
            shape = target
        else:
            values[name] = value
            usable.append(name)
        if rng.random() < 0.15:
            out["dtype"] = rng.choice(DTYPES)
            flags += ["--out-dtype", "%s=%s" % (name, out["dtype"])]
        if shape and rng.random() < 0.2:
            out["strides"] = view_strides(rng, shape)
            flags += ["--out-strides", "%s=[%s]" % (name, ",".join(map(str, out["strides"])))]
        outputs.append(out)
    return {"program": "; ".join(statements), "specs": specs, "ops": ops, "flags": flags, "outputs": outputs,
            "threads": rng.randint(2, 4), "cc": index % 4 == 0}


def expected(out):
    """('ok', want, x, axes) / ('error', ...) for one output."""
    x = out["value"]
    if out["reduce"]:
        status, y, axes = reduction_of(out["reduce"], x, out["target"])
        if status != "ok":
            return status, None, x, axes
    else:
        y, axes = x, ()
    if out["dtype"]:
        want = np.dtype(rn.NP[out["dtype"]])
        if not np.can_cast(y.dtype, want, casting="same_kind"):
            return "error", None, x, axes
        with np.errstate(all="ignore"):
            y = y.astype(want)
    return "ok", y, x, axes


def compare(out, got, want, x, axes):
    if got.dtype != want.dtype or list(got.shape) != list(want.shape):
        return "%s: got %s %s, want %s %s" % (out["name"], got.dtype, got.shape, want.dtype, want.shape)
    if out["reduce"] and got.dtype.kind == "f":
        problem = rn.float_ok(got, want, x, axes, out["reduce"], "f")
        return "%s: %s" % (out["name"], problem) if problem else None
    if got.dtype.kind == "f":
        g, w = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
        same = (g == w) | (np.isnan(g) & np.isnan(w))
        if not np.all(same):
            j = int(np.argmin(same))
            return "%s: element %d is %r, NumPy %r" % (out["name"], j, g[j], w[j])
        return None
    if not np.array_equal(got, want):
        return "%s: got %r, want %r" % (out["name"], got.ravel()[:8], want.ravel()[:8])
    return None


def run_case(bcgen, seed, index, work):
    folder = os.path.join(work, "case-%d" % index)
    os.makedirs(folder, exist_ok=True)
    case = make_case(seed, index, folder)
    results = [expected(o) for o in case["outputs"]]
    fails = any(r[0] != "ok" for r in results)
    what = "case %d: %s %s %s" % (index, case["program"], " ".join(case["specs"][1::2]).replace(folder + "/", ""),
                                  " ".join(case["flags"]))
    variants = [[], ["--reference"], ["--threads", str(case["threads"])]]
    if case["cc"]:
        variants.append(["--backend", "cc"])
    notes, seen = [], {}
    for number, variant in enumerate(variants):
        paths = [os.path.join(folder, "%s-%d.npy" % (o["name"], number)) for o in case["outputs"]]
        cmd = [bcgen, "run"] + case["specs"] + case["flags"] + variant
        for o, p in zip(case["outputs"], paths):
            cmd += ["-o", "%s=%s" % (o["name"], p)]
        cmd += ["--", case["program"]]
        line = " ".join(cmd)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if fails:
            if proc.returncode != 1 or not proc.stderr.strip():
                notes.append("NumPy rejects an output: want exit 1, got %d %r; %s" % (proc.returncode, proc.stderr[:200], line))
            continue
        if proc.returncode != 0:
            notes.append("exit %d: %s; %s" % (proc.returncode, proc.stderr.strip()[:300], line))
            continue
        if "reference evaluator" in proc.stderr and "--reference" not in variant:
            notes.append("a compiled kernel fell back: %s; %s" % (proc.stderr.strip()[:300], line))
        for o, p, (status, want, x, axes) in zip(case["outputs"], paths, results):
            got = np.load(p)
            problem = compare(o, got, want, x, axes)
            if problem:
                notes.append(problem + "; " + line)
            key = o["name"]
            if key in seen and seen[key] != got.tobytes():
                notes.append("%s: the runs differ (%s)" % (o["name"], " ".join(variant) or "JIT"))
            seen[key] = got.tobytes()
    if not notes:
        shutil.rmtree(folder, ignore_errors=True)
    outputs = len(case["outputs"])
    return not notes, what, notes, outputs


# ---- in process: thousands of programs through libbcgen.so (ctypes) ---------

import ctypes as C  # noqa: E402

DTYPE_CODE = {"bool": 0, "i8": 1, "i16": 2, "i32": 3, "i64": 4, "u8": 5, "u16": 6, "u32": 7,
              "u64": 8, "f32": 9, "f64": 10, "f16": 11}
REDUCE_CODE = {"sum": 1, "prod": 2, "min": 3, "max": 4, "mean": 5, "any": 6, "all": 7}
I64P = C.POINTER(C.c_int64)


class Operand(C.Structure):
    _fields_ = [("name", C.c_char_p), ("dtype", C.c_int), ("rank", C.c_int),
                ("shape", I64P), ("strides", I64P)]


class Output(C.Structure):
    _fields_ = [("dtype", C.c_int), ("rank", C.c_int), ("strides", I64P), ("reduce", C.c_int),
                ("shape", I64P)]


class Options(C.Structure):
    _fields_ = [(n, C.c_int) for n in ("inplace", "axis", "strict_rank", "warn_legacy",
                                       "unroll_limit", "unroll_factor", "microkernel_run",
                                       "backend", "native", "stream_stores")] + [
        ("output", C.POINTER(Output)), ("outputs", C.POINTER(Output)), ("output_count", C.c_int),
        ("output_names", C.POINTER(C.c_char_p)), ("separate_statements", C.c_int)]


class Error(C.Structure):
    _fields_ = [("status", C.c_int), ("column", C.c_int), ("operand", C.c_int),
                ("dimension", C.c_int), ("message", C.c_char * 512)]


def i64s(values):
    return (C.c_int64 * max(len(values), 1))(*values)


def strided_buffer(dt, shape, strides):
    """A zeroed buffer holding a view of SHAPE with STRIDES (elements) and
    the view, whose element [0,...,0] is at the pointer returned."""
    item = np.dtype(rn.NP[dt]).itemsize
    low = sum(s * (d - 1) for s, d in zip(strides, shape) if s < 0 and d > 0)
    high = sum(s * (d - 1) for s, d in zip(strides, shape) if s > 0 and d > 0)
    empty = any(d == 0 for d in shape)
    buf = np.zeros(1 if empty else high - low + 1, dtype=rn.NP[dt])
    start = 0 if empty else -low
    if not shape:
        return buf, buf.reshape(()), buf.ctypes.data
    view = np.lib.stride_tricks.as_strided(buf[start:], shape=tuple(shape),
                                           strides=tuple(s * item for s in strides))
    return buf, view, buf.ctypes.data + start * item


def in_process(lib, seed, count, log):
    lib.bcg_context_new.restype = C.c_void_p
    lib.bcg_context_free.argtypes = [C.c_void_p]
    lib.bcg_compile_program.argtypes = [C.c_void_p, C.c_char_p, C.POINTER(Operand), C.c_int,
                                        C.POINTER(Options), C.POINTER(C.c_void_p), C.POINTER(Error)]
    lib.bcg_run_outputs.argtypes = [C.c_void_p, C.POINTER(C.c_void_p), C.POINTER(C.c_void_p),
                                    C.c_int, C.POINTER(Error)]
    lib.bcg_program_free.argtypes = [C.c_void_p]
    lib.bcg_options_init.argtypes = [C.POINTER(Options)]
    lib.bcg_program_fused.argtypes = [C.c_void_p]
    lib.bcg_program_fused.restype = C.c_void_p
    failed = outputs = 0
    ctx = None
    for index in range(count):
        if index % 200 == 0:
            if ctx:
                lib.bcg_context_free(ctx)
            ctx = lib.bcg_context_new()
        case = make_case(seed, 100000 + index, None)
        keep = []
        ops = (Operand * len(case["ops"]))()
        inputs = (C.c_void_p * len(case["ops"]))()
        for i, (name, dt, shape, strides, data) in enumerate(case["ops"]):
            st = strides if strides else [int(np.prod(shape[d + 1:])) for d in range(len(shape))]
            buf, view, pointer = strided_buffer(dt, shape, st)
            view[...] = data
            sh, sd = i64s(shape), i64s(st)
            keep += [buf, sh, sd]
            ops[i] = Operand(name.encode(), DTYPE_CODE[dt], len(shape), sh, sd if strides else None)
            inputs[i] = pointer
        outs = (Output * len(case["outputs"]))()
        results = [expected(o) for o in case["outputs"]]
        for k, o in enumerate(case["outputs"]):
            target = o.get("target", list(o["value"].shape))
            sh = i64s(target)
            sd = i64s(o["strides"]) if o["strides"] else None
            keep += [sh, sd]
            outs[k] = Output(DTYPE_CODE[o["dtype"]] if o["dtype"] else -1,
                             len(target) if (o["reduce"] or o["strides"]) else 0, sd,
                             REDUCE_CODE[o["reduce"]] if o["reduce"] else 0,
                             sh if o["reduce"] else None)
        options = Options()
        lib.bcg_options_init(C.byref(options))
        options.outputs = outs
        options.output_count = len(case["outputs"])
        # by name, in reverse order half the time (by index otherwise)
        if index % 2:
            order = list(reversed(range(len(case["outputs"]))))
            outs = (Output * len(order))(*[outs[k] for k in order])
            names = (C.c_char_p * len(order))(*[case["outputs"][k]["name"].encode() for k in order])
            options.outputs = outs
            options.output_names = names
        prog, err = C.c_void_p(), Error()
        status = lib.bcg_compile_program(ctx, case["program"].encode(), ops, len(case["ops"]),
                                         C.byref(options), C.byref(prog), C.byref(err))
        # the per-statement kernels of the same program: the fused kernel
        # must give their bytes
        separate, separate_err = C.c_void_p(), Error()
        options.separate_statements = 1
        separate_status = lib.bcg_compile_program(ctx, case["program"].encode(), ops,
                                                  len(case["ops"]), C.byref(options),
                                                  C.byref(separate), C.byref(separate_err))
        if status == 0:
            log["fused"] += bool(lib.bcg_program_fused(prog))
            log["programs"] += 1
            if sum(1 for o in case["outputs"] if o["reduce"]) >= 2:
                log["multi"] += 1
                log["multi_fused"] += bool(lib.bcg_program_fused(prog))
        what = "in-process case %d: %s %s" % (index, case["program"], " ".join(case["flags"]))
        notes = []
        if any(r[0] != "ok" for r in results):
            if status == 0:
                notes.append("NumPy rejects an output; bcgen compiled it")
        elif status != 0:
            notes.append("compile: %s" % err.message.decode())
        elif separate_status != 0 or lib.bcg_program_fused(separate):
            notes.append("separate_statements: status %d, %s" % (
                separate_status, "fused" if separate_status == 0 else separate_err.message.decode()))
        else:
            bytes_of = {}
            for threads in (1, 2 + index % 3, 0):  # 0: the separate kernels on one thread
                run_prog = separate if threads == 0 else prog
                pointers = (C.c_void_p * len(case["outputs"]))()
                views = []
                for k, (o, (_, want, x, axes)) in enumerate(zip(case["outputs"], results)):
                    shape = list(want.shape)
                    st = o["strides"] or [int(np.prod(shape[d + 1:])) for d in range(len(shape))]
                    dt = rn.NAME[want.dtype] if want.dtype in rn.NAME else None
                    buf, view, pointer = strided_buffer(dt, shape, st)
                    views.append(view)
                    keep.append(buf)
                    pointers[k] = pointer
                if lib.bcg_run_outputs(run_prog, pointers, inputs, max(threads, 1), C.byref(err)) != 0:
                    notes.append("run (%d threads): %s" % (threads, err.message.decode()))
                    break
                for o, view, (_, want, x, axes) in zip(case["outputs"], views, results):
                    got = np.array(view, copy=True)
                    problem = compare(o, got, want, x, axes)
                    if problem:
                        notes.append("%s (%d threads)" % (problem, threads))
                    if o["name"] in bytes_of and bytes_of[o["name"]] != got.tobytes():
                        notes.append("%s: %s differ from 1 thread" % (
                            o["name"], "%d threads" % threads if threads else "the per-statement kernels"))
                    bytes_of[o["name"]] = got.tobytes()
        if status == 0:
            lib.bcg_program_free(prog)
        if separate_status == 0:
            lib.bcg_program_free(separate)
        outputs += len(case["outputs"])
        failed += bool(notes)
        print("%s %d - %s" % ("not ok" if notes else "ok", log["number"], what))
        log["number"] += 1
        for n in notes:
            print("# " + n)
    if ctx:
        lib.bcg_context_free(ctx)
    return failed, outputs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--case", type=int)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--in-process", type=int, default=2000,
                    help="programs run through libbcgen.so after the CLI's")
    opts = ap.parse_args()
    build = os.environ.get("BUILD", "build")
    bcgen = os.path.abspath(os.path.join(build, "bcgen"))
    work = os.path.abspath(os.path.join(build, "diff-work", "multi_numpy"))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    indices = [opts.case] if opts.case is not None else list(range(opts.count))
    extra = 0 if opts.case is not None else opts.in_process
    print("1..%d" % (len(indices) + extra))
    failed = outputs = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=opts.jobs) as pool:
        results = pool.map(lambda i: run_case(bcgen, opts.seed, i, work), indices)
        for number, (ok, what, notes, n) in enumerate(results, 1):
            failed += not ok
            outputs += n
            print("%s %d - %s" % ("ok" if ok else "not ok", number, what))
            for note in notes:
                print("# " + note)
    print("# multi_numpy seed %d: %d programs through bcgen run (%d outputs); %d passed, %d failed"
          % (opts.seed, len(indices), outputs, len(indices) - failed, failed))
    if extra:
        lib = C.CDLL(os.path.abspath(os.path.join(build, "libbcgen.so")))
        log = {"number": len(indices) + 1, "fused": 0, "programs": 0, "multi": 0, "multi_fused": 0}
        bad, n = in_process(lib, opts.seed, extra, log)
        print("# multi_numpy seed %d: %d programs in process (%d outputs); %d passed, %d failed"
              % (opts.seed, extra, n, extra - bad, bad))
        failed += bad
        # the generator must reach both paths: mostly fused, some not
        print("# %d of %d compiled programs fused into one kernel" % (log["fused"], log["programs"]))
        if not (0.5 * log["programs"] <= log["fused"] < log["programs"]):
            print("not ok - the fused share %d of %d is outside [50%%, 100%%)" % (log["fused"], log["programs"]))
            failed += 1
        # programs of several reductions: a good part of them fuse too
        print("# %d of %d compiled programs of several reductions fused into one kernel"
              % (log["multi_fused"], log["multi"]))
        if not (log["multi"] >= 0.05 * log["programs"] and log["multi_fused"] >= 0.3 * log["multi"]):
            print("not ok - too few programs of several reductions (%d) or fused (%d)"
                  % (log["multi"], log["multi_fused"]))
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
