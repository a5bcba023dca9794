#!/usr/bin/python3
"""bench.py - the Python half of `make bench`, and the table.

Runs bench/driver (bcgen through the C API, the reference evaluator and a
memcpy bound, as JSON lines), then times the same cases in this process
with NumPy, numexpr (one thread, so it is compared with one bcgen thread)
and PyTorch where they are installed, and prints one table: time, GB/s and
each peer's time divided by bcgen's (above 1: bcgen is faster), with the
targets of issues 5 and 12 checked against the numbers of this very run.
Writes everything as JSON (--json).

A case may give its output (bench/cases.txt's header): a view (NumPy
writes it with the root's ufunc and out=, e.g. np.add(a, b, out=view)), an
output dtype, a reduction (NumPy: x.OP(axis=..., keepdims=True) reshaped to
the target; numexpr: sum or prod over one axis only).  Every peer's result
of such a case is checked against NumPy's once before it is timed.

Every time is a median over repetitions of a loop of calls; for small
outputs the Python peers' per-call times include the interpreter's call
overhead, which is measured on its own (an empty function call) and shown
beside them rather than subtracted.

  bench.py --driver build/bench/driver [--cases bench/cases.txt]
           [--json bench/results.json] [--quick] [--only NAME[,NAME...]]
"""
import argparse
import ast
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

import numpy as np

try:
    import numexpr
except ImportError:  # a benchmark peer, installed by `make bench` when root
    numexpr = None
try:
    import torch
except ImportError:
    torch = None
try:
    import numba
except ImportError:
    numba = None

DTYPES = {"f32": np.float32, "f64": np.float64, "i8": np.int8, "i16": np.int16,
          "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u16": np.uint16,
          "u32": np.uint32, "u64": np.uint64, "bool": np.bool_, "f16": np.float16}

# The targets of issues 5 and 12: (what, case names, measure, bound).  A
# measure is peer_time / bcgen_time ("numpy", "numexpr"), "bound"
# (memcpy_time / bcgen_time), "nt_bound" (nt_bound_time / bcgen_time), "ns"
# (bcgen ns per call), "compile_ms", "hit_us".
TARGETS = [
    ("large broadcast f32/i32: >= 1.0x NumPy",
     ["add_row_4096", "outer_4096", "mul_4d", "add_i32"], "numpy", 1.0),
    ("large broadcast f32/i32: >= 0.85x memcpy bound",
     ["add_row_4096", "outer_4096", "mul_4d", "add_i32"], "bound", 0.85),
    ("in cache (1000,1000)+(1000,): >= 1.3x NumPy", ["add_row_1000"], "numpy", 1.3),
    ("a*b+c, where(...): >= 1.5x NumPy", ["fma3", "leaky_relu"], "numpy", 1.5),
    ("a*b+c, where(...): >= 1.0x numexpr", ["fma3", "leaky_relu"], "numexpr", 1.0),
    ("exp(a)+b: >= 1.0x NumPy", ["exp_add"], "numpy", 1.0),
    ("f16 a*b+c over 16M: >= 1.0x NumPy", ["fma_f16"], "numpy", 1.0),
    ("f16 a*b+c over 16M: >= 0.85x memcpy bound", ["fma_f16"], "bound", 0.85),
    ("small (3,4)+(4,): <= 30 ns per call", ["small_3x4"], "ns", 30.0),
    ("JIT compile median <= 0.5 ms", None, "compile_ms", 0.5),
    ("cache hit <= 1 us", None, "hit_us", 1.0),
    ("two threads >= 1.6x one thread on exp(a)+b at 16M elements", ["exp_add"], "threads", 1.6),
    # issue 12: output views and reductions.  The bound of a reduction is
    # the nt bound (read the input once, write the output once; the memcpy
    # bound copies half of those bytes, so it reads and writes 32 MB where
    # the sum only reads 64 MB): nt_bound_time / bcgen_time.
    ("sum over rows/cols of f32[4096,4096]: >= 1.0x NumPy", ["sum_rows", "sum_cols"],
     "numpy", 1.0),
    ("sum over rows/cols of f32[4096,4096]: >= 0.85x the bound (nt bound time / bcgen time)",
     ["sum_rows", "sum_cols"], "nt_bound", 0.85),
    ("g*a summed to b's shape: >= 2x NumPy's (g * a).sum(axis=0, keepdims=True)", ["grad_b"],
     "numpy", 2.0),
    ("a+b into a transposed view: >= 1.0x NumPy's np.add(a, b, out=view)", ["transposed_out"],
     "numpy", 1.0),
]


def parse_cases(path):
    cases = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = [x.strip() for x in line.split("|")]
            operands, output = [], {"dtype": None, "shape": None, "strides": None,
                                    "reduce": None, "to": None, "text": []}
            for word in fields[2].split():
                if word.startswith("out=") or "->" in word:
                    parse_output(word, output)
                    continue
                m = re.fullmatch(r"(\w+)=(\w+)\[([\d,]*)\](?:@\[([\d,-]*)\])?", word)
                if not m:
                    raise SystemExit("bench.py: cannot read operand %r" % word)
                shape = tuple(int(x) for x in m.group(3).split(",") if x)
                strides = tuple(int(x) for x in m.group(4).split(",")) if m.group(4) else None
                operands.append({"name": m.group(1), "dtype": m.group(2), "shape": shape,
                                 "strides": strides})
            if output["to"]:
                named = [op for op in operands if op["name"] == output["to"]]
                if not named:
                    raise SystemExit("bench.py: %s: no operand %s" % (fields[0], output["to"]))
                output["target"] = named[0]["shape"]
            output["text"] = " ".join(output["text"])
            cases.append({"name": fields[0], "expr": fields[1], "operands": operands,
                          "output": output if output["text"] else None,
                          "note": fields[3] if len(fields) > 3 else ""})
    return cases


REDUCTIONS = ("sum", "prod", "min", "max", "mean", "any", "all")


def parse_output(word, output):
    """out=DTYPE[SHAPE]@[STRIDES] (any part) or OP->[SHAPE] / OP->NAME."""
    output["text"].append(word)
    if "->" in word:
        op, target = word.split("->", 1)
        if op not in REDUCTIONS or output["reduce"]:
            raise SystemExit("bench.py: cannot read output %r" % word)
        output["reduce"] = op
        if target.startswith(("[", "(")):
            output["target"] = tuple(int(x) for x in target[1:-1].split(",") if x.strip())
        else:
            output["to"] = target
        return
    m = re.fullmatch(r"out=(\w*)(?:\[([\d,]*)\])?(?:@\[([\d,-]*)\])?", word)
    if not m or not any(m.groups()):
        raise SystemExit("bench.py: cannot read output %r" % word)
    if m.group(1):
        output["dtype"] = m.group(1)
    if m.group(2) is not None:
        output["shape"] = tuple(int(x) for x in m.group(2).split(",") if x)
    if m.group(3):
        output["strides"] = tuple(int(x) for x in m.group(3).split(","))


def make_array(op, rng):
    dtype = np.dtype(DTYPES[op["dtype"]])
    shape, strides = op["shape"], op["strides"]
    span = int(np.prod(shape)) if shape else 1
    offset = 0
    if strides:
        span = max(span, 1 + sum(abs(s) * (d - 1) for s, d in zip(strides, shape)))
        offset = sum(-s * (d - 1) for s, d in zip(strides, shape) if s < 0)
    if dtype.kind == "f":
        base = rng.uniform(-2, 2, span).astype(dtype)
    elif dtype.kind == "b":
        base = rng.integers(0, 2, span).astype(dtype)
    else:
        info = np.iinfo(dtype)
        base = rng.integers(info.min, info.max, span, dtype=dtype, endpoint=True)
    if strides:
        return np.lib.stride_tricks.as_strided(
            base[offset:], shape=shape, strides=tuple(s * dtype.itemsize for s in strides))
    return base.reshape(shape)


def time_call(fn, repeats, target):
    """Median seconds per call: REPEATS runs of a loop lasting about TARGET."""
    fn()
    start = time.perf_counter()
    fn()
    once = time.perf_counter() - start
    calls = max(1, min(1000000, int(target / once) if once > 0 else 1000000))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)


NUMBA_COMPILE_MS = {}
NUMPY_FUNCTIONS = {"exp": np.exp, "where": np.where, "sqrt": np.sqrt, "clip": np.clip,
                   "minimum": np.minimum, "maximum": np.maximum}


def numba_kernel(case, names, expected):
    """A numba.njit function of the case's expression, compiled here (its
    compile time, the first call's time less a later call's, goes to
    NUMBA_COMPILE_MS), or an explanation string."""
    args = ", ".join(names)
    namespace = dict(NUMPY_FUNCTIONS, np=np)
    exec("def kernel(%s):\n    return %s\n" % (args, case["expr"]), namespace)
    try:
        fn = numba.njit(namespace["kernel"])
        values = [names[n] for n in names]
        start = time.perf_counter()
        got = fn(*values)
        first = time.perf_counter() - start
        start = time.perf_counter()
        fn(*values)
        again = time.perf_counter() - start
    except Exception as e:  # numba's own limits
        return "unsupported: %s" % str(e).split("\n")[0][:60]
    NUMBA_COMPILE_MS[case["name"]] = max(first - again, 0.0) * 1e3
    if got.dtype != expected.dtype:
        return "computes in %s, not %s" % (got.dtype, expected.dtype)
    return lambda: fn(*values)


NUMPY_BINARY = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply,
                ast.Div: np.true_divide, ast.FloorDiv: np.floor_divide, ast.Mod: np.remainder,
                ast.Pow: np.power, ast.BitAnd: np.bitwise_and, ast.BitOr: np.bitwise_or,
                ast.BitXor: np.bitwise_xor, ast.LShift: np.left_shift,
                ast.RShift: np.right_shift}
NUMPY_UFUNCS = {"exp": np.exp, "sqrt": np.sqrt, "minimum": np.minimum, "maximum": np.maximum}


def reduce_axes(result_shape, target):
    """The axes of RESULT_SHAPE that a reduction to TARGET (right-aligned,
    1 or missing where reduced) sums over."""
    lead = len(result_shape) - len(target)
    return tuple(d for d in range(len(result_shape))
                 if d < lead or (target[d - lead] == 1 and result_shape[d] != 1))


def output_array(dtype, shape, strides):
    """A zeroed output of SHAPE, C-contiguous or with STRIDES (elements)."""
    dtype = np.dtype(dtype)
    if not strides:
        return np.zeros(shape, dtype)
    span = 1 + sum(abs(s) * (d - 1) for s, d in zip(strides, shape))
    offset = sum(-s * (d - 1) for s, d in zip(strides, shape) if s < 0)
    base = np.zeros(max(span, int(np.prod(shape))), dtype)
    return np.lib.stride_tricks.as_strided(
        base[offset:], shape=shape, strides=tuple(s * dtype.itemsize for s in strides))


def numpy_into(tree, numpy_ns, view):
    """A NumPy call that computes TREE (a parsed expression) into VIEW the
    way a NumPy user writes it: the root's ufunc with out= (its operands
    computed first, into temporaries), or view[...] = expr when the root has
    no ufunc with out= (where, clip, comparisons)."""
    root = tree.body
    if isinstance(root, ast.BinOp) and type(root.op) in NUMPY_BINARY:
        ufunc = NUMPY_BINARY[type(root.op)]
        args = [root.left, root.right]
    elif (isinstance(root, ast.Call) and isinstance(root.func, ast.Name)
          and root.func.id in NUMPY_UFUNCS and not root.keywords):
        ufunc, args = NUMPY_UFUNCS[root.func.id], root.args
    else:
        code = compile(tree, "<case>", "eval")

        def assign():
            view[...] = eval(code, numpy_ns)
        return assign
    codes = [compile(ast.Expression(a), "<case>", "eval") for a in args]
    return lambda: ufunc(*[eval(c, numpy_ns) for c in codes], out=view)


def output_peers(case, names, numpy_ns, code, full, ne_expr, ne_names):
    """{peer: callable or an explanation string} of a case with an output
    (a view, a dtype, a reduction), and NumPy's result to check them with."""
    spec = case["output"]
    out = {}
    py_expr = case["expr"]
    dtype = np.dtype(DTYPES[spec["dtype"]]) if spec["dtype"] else None
    if spec["reduce"]:
        op, target = spec["reduce"], spec["target"]
        axes = reduce_axes(full.shape, target)

        def reduced(value):
            r = getattr(value, op)(axis=axes, keepdims=True).reshape(target)
            return r.astype(dtype) if dtype is not None and r.dtype != dtype else r
        if spec["strides"]:
            view = output_array(dtype or reduced(full).dtype, target, spec["strides"])

            def numpy_fn():
                view[...] = reduced(eval(code, numpy_ns))
                return view
        else:
            def numpy_fn():
                return reduced(eval(code, numpy_ns))
        out["numpy"] = numpy_fn
        expected = reduced(full)
        if numexpr is None:
            out["numexpr"] = "not installed"
        elif op not in ("sum", "prod") or len(axes) != 1 or spec["strides"] or dtype is not None:
            out["numexpr"] = "cannot express %s over axes %s" % (op, axes)
        else:
            ne_code = "%s(%s, axis=%d)" % (op, ne_expr, axes[0])
            out["numexpr"] = lambda: numexpr.evaluate(ne_code, local_dict=ne_names).reshape(target)
        if torch is None:
            out["torch"] = "not installed"
        else:
            tensors = {k: torch.from_numpy(v) for k, v in names.items()}
            torch_ns = dict(tensors, exp=torch.exp, sqrt=torch.sqrt)
            method = {"min": "amin", "max": "amax"}.get(op, op)
            out["torch"] = lambda: getattr(eval(code, torch_ns), method)(
                dim=axes, keepdim=True).reshape(target)
    else:
        view = output_array(dtype or full.dtype, full.shape, spec["strides"])
        tree = ast.parse(py_expr, mode="eval")
        into = numpy_into(tree, numpy_ns, view)
        out["numpy"] = lambda: (into(), view)[1]
        expected = full.astype(dtype) if dtype is not None else full
        if numexpr is None:
            out["numexpr"] = "not installed"
        else:
            ne_view = output_array(dtype or full.dtype, full.shape, spec["strides"])
            out["numexpr"] = lambda: numexpr.evaluate(ne_expr, local_dict=ne_names, out=ne_view,
                                                      casting="same_kind")
        if torch is None:
            out["torch"] = "not installed"
        else:
            tensors = {k: torch.from_numpy(v) for k, v in names.items()}
            torch_ns = dict(tensors, exp=torch.exp, sqrt=torch.sqrt)
            t_view = torch.from_numpy(output_array(dtype or full.dtype, full.shape,
                                                   spec["strides"]))
            out["torch"] = lambda: t_view.copy_(eval(code, torch_ns))
    out["numba"] = "not installed" if numba is None else "not expressed (output view or reduction)"
    # each peer's result against NumPy's, once, before timing
    for peer, fn in list(out.items()):
        if isinstance(fn, str):
            continue
        try:
            got = fn()
            got = np.asarray(got.numpy() if hasattr(got, "numpy") else got)
        except Exception as e:  # the peer's own limits (out= layouts, dtypes)
            out[peer] = "unsupported: %s" % str(e).split("\n")[0][:60]
            continue
        if got.shape != expected.shape or got.dtype != expected.dtype:
            out[peer] = "gives %s%s, not %s%s" % (got.dtype, got.shape, expected.dtype,
                                                  expected.shape)
        elif spec["reduce"] and expected.dtype.kind == "f":
            # a peer may sum in its own order (numexpr: one accumulator);
            # the driver's tolerance for the hand loops: 1e-3 (f32) or 1e-9
            # of max(|x|, 1)
            tol = 1e-3 if expected.dtype.itemsize <= 4 else 1e-9
            scale = np.maximum(np.maximum(np.abs(got), np.abs(expected)), 1)
            if not np.all(np.abs(got.astype(np.float64) - expected) <= tol * scale):
                out[peer] = "wrong result (max difference %.3g)" % np.max(np.abs(got - expected))
        elif not np.array_equal(got, expected, equal_nan=expected.dtype.kind in "fc"):
            out[peer] = "wrong result"
    return out


def numexpr_form(py_expr, names, expected):
    """numexpr reads a float literal as a double; with f32 inputs, bind
    literals to f32 scalars so it computes in f32 as NumPy does."""
    ne_expr, ne_names = py_expr, dict(names)
    if expected.dtype == np.float32:
        for k, literal in enumerate(sorted(set(re.findall(r"\b\d+\.\d*", py_expr)))):
            ne_names["literal%d" % k] = np.float32(float(literal))
            ne_expr = re.sub(r"\b%s\b" % re.escape(literal), "literal%d" % k, ne_expr)
    return ne_expr, ne_names


def peers(case, arrays):
    """{peer: callable or an explanation string}."""
    names = dict(arrays)
    py_expr = case["expr"]
    out = {}
    numpy_ns = dict(names, **NUMPY_FUNCTIONS)
    code = compile(py_expr, "<case>", "eval")
    out["numpy"] = lambda: eval(code, numpy_ns)
    expected = out["numpy"]()
    if case.get("output"):
        ne_expr, ne_names = numexpr_form(py_expr, names, expected)
        return output_peers(case, names, numpy_ns, code, expected, ne_expr, ne_names)
    if numexpr is None:
        out["numexpr"] = "not installed"
    else:
        ne_expr, ne_names = numexpr_form(py_expr, names, expected)
        try:
            got = numexpr.evaluate(ne_expr, local_dict=ne_names)
            if got.dtype != expected.dtype:
                out["numexpr"] = "computes in %s, not %s" % (got.dtype, expected.dtype)
            else:
                out["numexpr"] = lambda: numexpr.evaluate(ne_expr, local_dict=ne_names)
        except Exception as e:  # numexpr's own limits (dtypes, functions)
            out["numexpr"] = "unsupported: %s" % str(e).split("\n")[0][:60]
    if numba is None:
        out["numba"] = "not installed"
    else:
        out["numba"] = numba_kernel(case, names, expected)
    if torch is None:
        out["torch"] = "not installed"
    else:
        tensors = {k: torch.from_numpy(v) for k, v in names.items()}
        torch_ns = dict(tensors, exp=torch.exp, where=torch.where, sqrt=torch.sqrt,
                        clip=torch.clip, minimum=torch.minimum, maximum=torch.maximum)
        out["torch"] = lambda: eval(code, torch_ns)
    return out


def machine():
    info = {"python": platform.python_version(), "numpy": np.__version__,
            "numexpr": numexpr.__version__ if numexpr else None,
            "torch": torch.__version__ if torch else None,
            "numba": numba.__version__ if numba else None,
            "cores": os.cpu_count(), "cpu": platform.processor() or "?"}
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        m = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
        if m:
            info["cpu"] = m.group(1).strip()
        flags = re.search(r"^flags\s*:\s*(.*)$", text, re.M)
        if flags:
            have = set(flags.group(1).split())
            info["vector"] = " ".join(f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f")
                                      if f in have)
    except OSError:
        pass
    try:
        info["cc"] = subprocess.run(["cc", "--version"], capture_output=True,
                                    text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        info["cc"] = None
    return info


def format_time(seconds):
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return "%.3g %s" % (seconds / scale, unit)
    return "%.3g ns" % (seconds / 1e-9)


def ratio_text(peer, bcgen):
    if isinstance(peer, str) or peer is None:
        return "-"
    return "%s (%.2fx)" % (format_time(peer), peer / bcgen)


def check_targets(rows):
    by_name = {r["name"]: r for r in rows}
    results = []
    for what, names, measure, bound in TARGETS:
        chosen = [by_name[n] for n in (names or by_name) if n in by_name]
        values, missing, capacities = [], [], []
        for r in chosen:
            if measure in ("numpy", "numexpr"):
                peer = r["peers"].get(measure)
                if isinstance(peer, (int, float)):
                    values.append((r["name"], peer / r["bcgen_tcc_s"]))
                else:
                    missing.append(r["name"])
            elif measure == "threads":
                values.append((r["name"], r["bcgen_tcc_s"] / r["bcgen_threads_s"]))
                if r.get("thread_capacity"):
                    capacities.append("%s: the machine's own two-thread capacity in this run "
                                      "%.2fx (a plain two-thread spin), speedup / capacity %.2f"
                                      % (r["name"], r["thread_capacity"],
                                         values[-1][1] / r["thread_capacity"]))
            elif measure == "bound":
                values.append((r["name"], r["memcpy_s"] / r["bcgen_tcc_s"]))
            elif measure == "nt_bound":
                values.append((r["name"], r["nt_bound_s"] / r["bcgen_tcc_s"]))
            elif measure == "ns":
                values.append((r["name"], r["bcgen_tcc_s"] * 1e9))
            else:
                values.append((r["name"], r["cache_hit_us" if measure == "hit_us" else measure]))
        if not values:
            results.append({"target": what, "met": None, "values": {}, "note": "not measured"})
            continue
        lower_is_better = measure in ("ns", "compile_ms", "hit_us")
        met = all((v <= bound) if lower_is_better else (v >= bound) for _, v in values)
        notes = (["no value for " + ", ".join(missing)] if missing else []) + capacities
        results.append({"target": what, "met": met, "values": dict(values),
                        "note": "; ".join(notes)})
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--driver", default=os.path.join(os.environ.get("BUILD", "build"),
                                                         "bench", "driver"))
    parser.add_argument("--cases", default=os.path.join(here, "cases.txt"))
    parser.add_argument("--json", default=os.path.join(here, "results.json"))
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--only", help="these cases (comma-separated names)")
    args = parser.parse_args()

    cases = parse_cases(args.cases)
    if args.only:
        cases = [c for c in cases if c["name"] in args.only.split(",")]
    command = [args.driver, args.cases] + (["--quick"] if args.quick else [])
    if args.only:
        command += ["--only", args.only]
    driven = subprocess.run(command, capture_output=True, text=True)
    sys.stderr.write(driven.stderr)
    c_rows = {}
    for line in driven.stdout.splitlines():
        row = json.loads(line)
        c_rows[row["name"]] = row
    if driven.returncode != 0:
        print("bench.py: the C driver failed (exit %d)" % driven.returncode, file=sys.stderr)

    repeats, target = (3, 0.02) if args.quick else (11, 0.1)
    rng = np.random.default_rng(1)
    overhead = time_call(lambda: None, repeats, target)
    rows = []
    for case in cases:
        row = c_rows.get(case["name"])
        if row is None:
            continue
        arrays = {op["name"]: make_array(op, rng) for op in case["operands"]}
        row["peers"] = {}
        for peer, fn in peers(case, arrays).items():
            if isinstance(fn, str):
                row["peers"][peer] = fn
                continue
            if peer == "numexpr":
                numexpr.set_num_threads(1)
            row["peers"][peer] = time_call(fn, repeats, target)
        row["note"] = case["note"]
        if case["name"] in NUMBA_COMPILE_MS:
            row["numba_compile_ms"] = NUMBA_COMPILE_MS[case["name"]]
        rows.append(row)
        del arrays

    info = machine()
    print("bcgen benchmark on %s (%s cores; %s); %s; NumPy %s, numexpr %s, PyTorch %s"
          % (info["cpu"], info["cores"], info.get("vector", "?"), info["cc"],
             info["numpy"], info["numexpr"] or "not installed",
             info["torch"] or "not installed"))
    print("times are medians; (N.NNx) = that system's time / bcgen tcc's time, above 1: "
          "bcgen is faster;")
    print("bcgen cc = the cc backend (cc -O3 -march=native, disk-cached), its (N.NNx) = "
          "bcgen tcc's time / its time;")
    print("hand = the case's hand-written loop (bench/hand.c, gcc -O3 -march=native), its "
          "(N.NNx) = bcgen tcc's time / its time (timed next to each other), above 1: the hand "
          "loop is faster;")
    print("nt bound = reading the inputs and writing the output with streaming stores, its "
          "(N.NNx) = bcgen tcc's time / its time;")
    print("2 threads = bcg_run_threads with two threads, its (N.NNx) = one thread's time / its "
          "time; spin = the machine's own two-thread capacity measured around it (a plain "
          "compute loop: 2 x one thread's time / two threads' time, 2.00 on two idle cores);")
    print("numexpr runs one thread; Python call overhead (an empty call): %s per call"
          % format_time(overhead))
    print()
    header = ("case", "expression", "elements", "bcgen tcc", "GB/s", "2 threads", "bcgen cc",
              "hand", "nt bound", "memcpy bound",
              "compile", "cache hit", "reference C loop", "NumPy", "numexpr", "PyTorch",
              "numba", "numba compile")
    table = [header]
    for r in rows:
        bcgen = r["bcgen_tcc_s"]
        p = r["peers"]
        expression = r["expr"] + ("  " + r["output"] if r.get("output") else "")
        table.append((r["name"], expression, str(r["elements"]), format_time(bcgen),
                      "%.1f" % (r["bytes"] / bcgen / 1e9),
                      "%s (%.2fx%s)" % (format_time(r["bcgen_threads_s"]),
                                        bcgen / r["bcgen_threads_s"],
                                        ", spin %.2fx" % r["thread_capacity"]
                                        if r.get("thread_capacity") else ""),
                      ("%s (%.2fx)" % (format_time(r["bcgen_cc_s"]), bcgen / r["bcgen_cc_s"])
                       if r.get("bcgen_cc_s") and not r.get("cc_note") else "-"),
                      ("%s (%.2fx)" % (format_time(r["hand_s"]), r["hand_ratio"])
                       if r.get("hand_s") else "-"),
                      "%s (%.2fx)" % (format_time(r["nt_bound_s"]), bcgen / r["nt_bound_s"]),
                      "%s (%.2fx)" % (format_time(r["memcpy_s"]), r["memcpy_s"] / bcgen),
                      "%.3f ms" % r["compile_ms"], "%.2f us" % r["cache_hit_us"],
                      ratio_text(r["reference_s"], bcgen), ratio_text(p.get("numpy"), bcgen),
                      ratio_text(p.get("numexpr"), bcgen), ratio_text(p.get("torch"), bcgen),
                      ratio_text(p.get("numba"), bcgen),
                      "%.0f ms" % r["numba_compile_ms"] if "numba_compile_ms" in r else "-"))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for i, row in enumerate(table):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    for r in rows:
        if r.get("hand_differences"):
            print("note: %s hand loop differs from bcgen in %d elements"
                  % (r["name"], r["hand_differences"]))
        if r.get("cc_note"):
            print("note: %s bcgen cc: %s" % (r["name"], r["cc_note"]))
        for peer, value in r["peers"].items():
            if isinstance(value, str) and value != "not installed":
                print("note: %s %s: %s" % (r["name"], peer, value))
    if numba is None:
        print("note: numba is not installed: no numba columns")

    targets = check_targets(rows)
    print()
    print("targets of issues 5 and 12 (this run):")
    for t in targets:
        state = {True: "MET    ", False: "NOT MET", None: "-      "}[t["met"]]
        values = ", ".join("%s %.3g" % kv for kv in t["values"].items())
        print("  %s %s%s%s" % (state, t["target"], ": " + values if values else "",
                               " (" + t["note"] + ")" if t["note"] else ""))

    result = {"machine": info, "python_call_overhead_s": overhead, "cases": rows,
              "targets": targets, "quick": args.quick,
              "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    with open(args.json, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print("\nwrote %s" % args.json)
    return 0 if driven.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
