#!/usr/bin/python3
"""kernel_numpy.py - differential test: bcgen's kernels against NumPy.

Runs seeded random cases from _gen_cases.py through `$BUILD/bcgen run EXPR
-i ... -o out.npy`, with the JIT, with --reference, and with --unroll
variants, and compares each result with the NumPy oracle: same dtype and
shape, integers and bools identical, floats within 1 ulp (within the
oracle's error bound where a transcendental is involved), NaN where NumPy
has NaN.  Cases that NumPy rejects must make bcgen exit 1 with a message.
Prints TAP, one line per case; a failing case keeps its files under
$BUILD/diff-work/kernel_numpy/ and prints the command lines to reproduce.

  kernel_numpy.py [--seed S] [--count N] [--jobs J] [--verbose]
  kernel_numpy.py --case I [--seed S]     one case, its commands printed
  kernel_numpy.py --self-check            the generator and oracle alone
"""
import argparse
import concurrent.futures
import os
import random
import shlex
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402

import _gen_cases as gc  # noqa: E402

TIMEOUT = 60


def variants(case):
    """The bcgen flags each case is run with: the JIT, the reference
    evaluator, and the JIT with one --unroll setting (full only for small
    results: full unrolling is straight-line code per element)."""
    rng = random.Random("variants-%d-%d" % (case["seed"], case["index"]))
    choices = ["none", "2", "3", "4", "8"]
    if case["elements"] <= 256:
        choices += ["full", "full", "full"]
    return [[], ["--reference"], ["--unroll", rng.choice(choices)]]


def command(bcgen, case, folder, flags):
    cmd = [bcgen, "run", case["expr"]]
    for op in case["operands"]:
        cmd += ["-i", gc.operand_spec(op, os.path.join(folder, op["name"] + ".npy"))]
    cmd += ["-o", os.path.join(folder, "out.npy")]
    if case["inplace"]:
        cmd += ["--inplace", case["inplace"]]
    return cmd + flags


def describe(case):
    ops = " ".join("%s=%s[%s]%s" % (o["name"], o["dtype"], ",".join(map(str, o["shape"])),
                                    "@" if o["strides"] else "") for o in case["operands"])
    expr = case["expr"] if len(case["expr"]) <= 90 else case["expr"][:87] + "..."
    extra = " inplace=" + case["inplace"] if case["inplace"] else ""
    extra += " (expect error)" if case["expect_error"] else ""
    return "case %d: %s  %s%s" % (case["index"], expr, ops, extra)


def run_case(bcgen, seed, index, workdir, verbose):
    """Returns (passed, description, comment lines)."""
    case = gc.make_case(seed, index)
    notes = []
    try:
        expected, bound = gc.oracle(case)
    except gc.OracleError as e:
        expected, bound = None, None
        if not case["expect_error"]:
            notes.append("numpy rejects this expression: %s" % e)
    except AssertionError as e:
        return False, describe(case), ["oracle: " + str(e)]
    folder = os.path.join(workdir, "case-%d" % index)
    os.makedirs(folder, exist_ok=True)
    failures = []
    for flags in variants(case):
        # written again for every run: an in-place run must not change what
        # the next one reads, even if it wrote its result back to the file
        for op in case["operands"]:
            if op["source"] is None:
                np.save(os.path.join(folder, op["name"] + ".npy"), op["data"])
        cmd = command(bcgen, case, folder, flags)
        line = " ".join(shlex.quote(c) for c in cmd)
        out = os.path.join(folder, "out.npy")
        if os.path.exists(out):
            os.remove(out)
        if verbose:
            notes.append(line)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            failures.append(("timed out after %ds" % TIMEOUT, line))
            continue
        stderr = proc.stderr.strip().replace("\n", " | ")[:400]
        if expected is None:
            if proc.returncode != 1 or not stderr:
                failures.append(("numpy rejects it, so bcgen must exit 1 with a message; "
                                 "got exit %d, stderr %r" % (proc.returncode, stderr), line))
            continue
        if proc.returncode != 0:
            failures.append(("exit %d: %s" % (proc.returncode, stderr), line))
            continue
        if "--reference" not in flags and "warning" in proc.stderr:
            # the JIT fell back to the reference evaluator: the result may be
            # right, but the generated code was not what ran
            failures.append(("the JIT was not used: %s" % stderr, line))
            continue
        try:
            got = np.load(out)
        except Exception as e:  # a missing or malformed file is a failure, whatever it is
            failures.append(("cannot read %s: %s" % (out, e), line))
            continue
        problem = gc.compare(got, expected, bound)
        if problem:
            failures.append((problem, line))
    for problem, line in failures:
        notes.append(problem)
        notes.append("  reproduce: " + line)
    if failures:
        notes.append("  regenerate: %s %s --seed %d --case %d" % (sys.executable, sys.argv[0], seed, index))
    elif not verbose:
        shutil.rmtree(folder, ignore_errors=True)
    return not failures, describe(case), notes


def bcgen_available(bcgen):
    if not os.path.isfile(bcgen) or not os.access(bcgen, os.X_OK):
        return False
    try:
        proc = subprocess.run([bcgen, "run", "--help"], capture_output=True, timeout=TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def run_all(opts):
    build = os.environ.get("BUILD", "build")
    bcgen = os.path.abspath(os.path.join(build, "bcgen"))
    if not bcgen_available(bcgen):
        print("1..1")
        print("not ok 1 - bcgen run is not available")
        print("# %s is missing or `%s run --help` failed" % (bcgen, bcgen))
        return 1
    workdir = os.path.abspath(os.path.join(build, "diff-work", "kernel_numpy"))
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    indices = [opts.case] if opts.case is not None else list(range(opts.count))
    verbose = opts.verbose or opts.case is not None
    print("1..%d" % len(indices))
    sys.stdout.flush()
    start = time.time()
    passed = failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=opts.jobs) as pool:
        futures = [pool.submit(run_case, bcgen, opts.seed, i, workdir, verbose) for i in indices]
        for number, future in enumerate(futures, 1):
            try:
                ok, what, notes = future.result()
            except Exception as e:  # a crash in one case must not hide the others
                ok, what, notes = False, "case %d" % indices[number - 1], ["test crashed: %r" % e]
            passed += ok
            failed += not ok
            print("%s %d - %s" % ("ok" if ok else "not ok", number, what))
            for n in notes:
                print("# " + n)
            sys.stdout.flush()
    print("# kernel_numpy seed %d: %d passed, %d failed in %.1fs" % (
        opts.seed, passed, failed, time.time() - start))
    return 0 if failed == 0 else 1


# ---- self-check: the generator and the oracle without bcgen -------------------------

def spot_cases():
    """(expression, {name: array}, expected array or "error"): the
    documented semantics the oracle must reproduce (docs/semantics.md)."""
    A = np.array
    i8, i32, u8, f32, f64 = np.int8, np.int32, np.uint8, np.float32, np.float64
    nan = np.nan
    return [
        ("a // b", {"a": A([-128, 7, 7, -7], i8), "b": A([-1, 0, -2, 2], i8)}, A([-128, 0, -4, -4], i8)),
        ("a % b", {"a": A([-128, 7, 7, -7], i8), "b": A([-1, 0, -2, 2], i8)}, A([0, 0, -1, 1], i8)),
        ("a % b", {"a": A([5.5, -5.5, 1.0], f64), "b": A([-2.0, 2.0, 0.0], f64)}, A([-0.5, 0.5, nan], f64)),
        ("a // b", {"a": A([7.0, -7.0, 1.0], f32), "b": A([2.0, 2.0, 0.0], f32)}, A([3.0, -4.0, np.inf], f32)),
        ("a ** b", {"a": A([2, 1, -1, -1, 0, 3, 5], i32), "b": A([-1, -5, -3, -2, -2, 40, 0], i32)},
         A([0, 1, -1, 1, 0, (3**40 + 2**31) % 2**32 - 2**31, 1], i32)),
        ("a ** 2", {"a": A([200, 16], u8)}, A([64, 0], u8)),
        ("a ** b", {"a": A([True, False]), "b": A([False, True])}, A([1, 0], i8)),
        ("a << b", {"a": A([1, 1, 1, -1, 1], i8), "b": A([-1, 8, 7, 1, 2], i8)}, A([0, 0, -128, -2, 4], i8)),
        ("a >> b", {"a": A([-5, 5, -5, 64], i8), "b": A([8, 9, -1, 3], i8)}, A([-1, 0, -1, 8], i8)),
        ("a << b", {"a": A([True]), "b": A([True])}, A([2], i8)),
        ("i8(a)", {"a": A([nan, 1e10, -1e10, -3.7, 127.9, -0.5], f32)}, A([0, 127, -128, -3, 127, 0], i8)),
        ("u8(a)", {"a": A([-1.5, 300.0, nan, 255.9], f64)}, A([0, 255, 0, 255], u8)),
        ("i64(a)", {"a": A([9.3e18, -9.3e18, 2.0**63, -2.0**63], f64)},
         A([2**63 - 1, -2**63, 2**63 - 1, -2**63], np.int64)),
        ("u64(a)", {"a": A([1.8e19, 2.0**64, -1.0, np.inf], f64)},
         A([18000000000000000000, 2**64 - 1, 0, 2**64 - 1], np.uint64)),
        ("i8(a)", {"a": A([300, -129], i32)}, A([44, 127], i8)),
        ("bool(a)", {"a": A([nan, 0.0, -0.0, 0.5], f32)}, A([True, False, False, True])),
        ("sqrt(a)", {"a": A([4, 9], i8)}, A([2, 3], f32)),
        ("sqrt(a)", {"a": A([4, 9], np.uint16)}, A([2, 3], f32)),
        ("sqrt(a)", {"a": A([4, 9], i32)}, A([2, 3], f64)),
        ("sqrt(a)", {"a": A([True, False])}, A([1, 0], f32)),
        ("floor(a)", {"a": A([4, -9], np.int16)}, A([4, -9], f32)),
        ("exp(a)", {"a": A([0], u8)}, A([1], f32)),
        ("a + 300", {"a": A([1], u8)}, "error"),
        ("a + (-1)", {"a": A([1], u8)}, "error"),
        ("a == 300", {"a": A([1], u8)}, "error"),
        ("a < (-1)", {"a": A([1], u8)}, "error"),
        ("a + (-128)", {"a": A([1], i8)}, A([-127], i8)),
        ("a + 18446744073709551615", {"a": A([1], np.uint64)}, A([0], np.uint64)),
        ("a + 9223372036854775808", {"a": A([1], np.int64)}, "error"),
        ("a + 3", {"a": A([True])}, A([4], np.int64)),
        ("a + 1.5", {"a": A([1], f32)}, A([2.5], f32)),
        ("a + 1.5", {"a": A([1], i32)}, A([2.5], f64)),
        ("a + 1.5", {"a": A([1], i8)}, A([2.5], f64)),
        ("a * 2", {"a": A([100], i8)}, A([-56], i8)),
        ("a + b", {"a": A([1], np.int64), "b": A([2], np.uint64)}, A([3.0], f64)),
        ("a + b", {"a": A([1], i8), "b": A([2], u8)}, A([3], np.int16)),
        ("a + b", {"a": A([1], f32), "b": A([2], i32)}, A([3], f64)),
        ("a + b", {"a": A([True, False]), "b": A([True, False])}, A([True, False])),
        ("a * b", {"a": A([True, True]), "b": A([True, False])}, A([True, False])),
        ("a - b", {"a": A([True]), "b": A([True])}, "error"),
        ("-a", {"a": A([True])}, "error"),
        ("-a", {"a": A([1, 0], u8)}, A([255, 0], u8)),
        ("+a", {"a": A([True])}, A([True])),
        ("~a", {"a": A([True, False])}, A([False, True])),
        ("~a", {"a": A([1.0], f32)}, "error"),
        ("a & b", {"a": A([1.0], f32), "b": A([1], i32)}, "error"),
        ("a << b", {"a": A([1], np.int64), "b": A([1], np.uint64)}, "error"),
        ("a & b", {"a": A([True, True]), "b": A([True, False])}, A([True, False])),
        ("a / b", {"a": A([1], i8), "b": A([2], i8)}, A([0.5], f64)),
        ("a / b", {"a": A([True]), "b": A([True])}, A([1.0], f64)),
        ("a / 2", {"a": A([1], f32)}, A([0.5], f32)),
        ("a // b", {"a": A([True]), "b": A([True])}, A([1], i8)),
        ("a % b", {"a": A([True]), "b": A([True])}, A([0], i8)),
        ("a && b", {"a": A([nan, 0.0], f32), "b": A([2, 2], i8)}, A([True, False])),
        ("!a", {"a": A([nan, 0.0], f64)}, A([False, True])),
        ("a != a", {"a": A([nan, 1.0], f64)}, A([True, False])),
        ("abs(a)", {"a": A([-128, -5], i8)}, A([-128, 5], i8)),
        ("abs(a)", {"a": A([True])}, A([True])),
        ("minimum(a, b)", {"a": A([nan, 1.0], f32), "b": A([1.0, nan], f32)}, A([nan, nan], f32)),
        ("maximum(a, 3)", {"a": A([True])}, A([3], np.int64)),
        ("where(c, a, 300)", {"c": A([True]), "a": A([1], u8)}, "error"),
        ("where(c, a, 2.5)", {"c": A([nan, 0.0], f32), "a": A([1, 1], i8)}, A([1.0, 2.5], f64)),
        ("where(c, a, b)", {"c": A([1, 0], i8), "a": A([1], i8), "b": A([2], u8)}, A([1, 2], np.int16)),
        ("clip(a, 0, 5)", {"a": A([True, False])}, A([1, 0], np.int64)),
        ("clip(a, 5, 2)", {"a": A([0, 9], i8)}, A([2, 2], i8)),
        ("clip(a, (-1), 5)", {"a": A([1], u8)}, "error"),
        ("clip(a, 449, b)", {"a": A([True]), "b": A([1], u8)}, "error"),
        ("clip(a, b, 4.625)", {"a": A([9], f32), "b": A([1], np.int16)}, A([4.625], f32)),
        ("clip(a, 1, b)", {"a": A([-3], i8), "b": A([1.0], f32)}, A([1.0], f32)),
        ("f32(a)", {"a": A([16777217], np.int64)}, A([16777216], f32)),
        ("7", {"a": A([1, 2, 3], u8)}, A([7, 7, 7], np.int64)),
        ("2.5", {"a": A(0, u8)}, A(2.5, f64)),
    ]


def tap(state, ok, what, notes=()):
    state["n"] += 1
    state["failed"] += not ok
    print("%s %d - %s" % ("ok" if ok else "not ok", state["n"], what))
    for n in notes:
        print("# " + n)


def spot_check(state, text, arrays, want):
    names = list(arrays)
    operands = [{"name": n, "dtype": gc.NAME_OF[arrays[n].dtype], "shape": list(arrays[n].shape),
                 "strides": None, "zero_axes": [], "data": arrays[n], "source": None} for n in names]
    case = {"operands": operands, "tree": gc.parse(text, names), "expr": text}
    try:
        got, bound = gc.oracle(case)
    except gc.OracleError as e:
        tap(state, isinstance(want, str), "oracle: %s raises (%s)" % (text, str(e)[:60]))
        return
    if isinstance(want, str):
        tap(state, False, "oracle: %s must raise, gave %r %s" % (text, got, got.dtype))
        return
    problem = gc.compare(got, want, None)
    tap(state, problem is None, "oracle: %s over %s -> %s" % (text, ",".join(
        gc.NAME_OF[a.dtype] for a in arrays.values()), gc.NAME_OF[want.dtype]),
        [problem] if problem else [])


def layout_problem(op):
    """Why OP's strides cannot describe a buffer of its logical values, or None."""
    shape, strides = op["shape"], op["strides"]
    data = op["data"]
    if list(data.shape) != list(shape) or data.dtype != gc.NP_DTYPE[op["dtype"]]:
        return "data %s %s does not match the declaration" % (data.dtype, data.shape)
    if strides is None:
        return None
    if len(strides) != len(shape):
        return "rank of strides"
    if data.size == 0:
        return None
    for k, s in enumerate(strides):
        if s == 0 and shape[k] > 1:
            first = np.take(data, [0], axis=k)
            if not np.array_equal(np.broadcast_to(first, data.shape), data, equal_nan=data.dtype.kind == "f"):
                return "axis %d has stride 0 but its values vary" % k
    index = np.indices(shape).reshape(len(shape), -1)
    offsets = (np.array(strides)[:, None] * index).sum(axis=0)
    live = [k for k, s in enumerate(strides) if s != 0]
    distinct = int(np.prod([shape[k] for k in live])) if live else 1
    if len(np.unique(offsets)) != distinct:
        return "strides %s overlap" % strides
    return None


def check_case(case):
    """Problems with one generated case (empty list: fine)."""
    problems = []
    names = [o["name"] for o in case["operands"]]
    for minimal in (False, True):
        text = gc.fmt(case["tree"], minimal)
        try:
            back = gc.parse(text, names)
            if not gc.same_tree(back, case["tree"]):
                problems.append("%r does not parse back to the same tree" % text)
        except ValueError as e:
            problems.append("cannot parse %r: %s" % (text, e))
    if case["expr"].startswith("-"):
        problems.append("expression starts with '-'")
    for op in case["operands"]:
        p = layout_problem(op)
        if p:
            problems.append("%s: %s" % (op["name"], p))
    try:
        shape = list(np.broadcast_shapes(*[tuple(o["shape"]) for o in case["operands"]]))
    except ValueError:
        if not case["broadcast_error"]:
            problems.append("shapes do not broadcast")
        shape = None
    try:
        value, bound = gc.oracle(case)
    except gc.OracleError as e:
        if not case["expect_error"]:
            problems.append("oracle raised on a case meant to be valid: %s" % e)
        return problems
    except AssertionError as e:
        return problems + [str(e)]
    if case["expect_error"]:
        problems.append("a case meant to fail was accepted by numpy")
    if list(value.shape) != shape:
        problems.append("oracle shape %s, broadcast %s" % (value.shape, shape))
    dts = {o["name"]: gc.NP_DTYPE[o["dtype"]] for o in case["operands"]}
    if value.dtype != gc.result_dtype(case["tree"], dts):
        problems.append("oracle dtype %s differs from result_dtype" % value.dtype)
    if case["inplace"]:
        op = [o for o in case["operands"] if o["name"] == case["inplace"]][0]
        if op["shape"] != shape or gc.NP_DTYPE[op["dtype"]] != value.dtype:
            problems.append("in-place operand %s does not match the result" % op["name"])
        if op["strides"] and any(s == 0 and d > 1 for s, d in zip(op["strides"], op["shape"])):
            problems.append("in-place operand has a 0 stride")
    # the same tree over single elements must give the same values: checks
    # that the oracle broadcasts and that nothing depends on neighbours
    if value.size:
        rng = random.Random(case["index"])
        for _ in range(2):
            at = tuple(rng.randrange(d) for d in shape)
            single = dict(case)
            single["operands"] = []
            for o in case["operands"]:
                rank = len(o["shape"])
                sub = tuple(0 if d == 1 else i for i, d in zip(at[len(at) - rank:], o["shape"])) if rank else ()
                single["operands"].append(dict(o, shape=[], data=np.array(o["data"][sub])))
            v1, _ = gc.oracle(single)
            if gc.compare(v1.reshape(1), value[at].reshape(1), None):
                problems.append("element %s alone gives %r, in the array %r" % (at, v1, value[at]))
    # the comparison must catch a wrong element
    if value.size:
        wrong = value.copy()
        flat = wrong.reshape(-1)
        if value.dtype.kind == "b":
            flat[0] = not flat[0]
        elif value.dtype.kind in "iu":
            with np.errstate(over="ignore"):
                flat[0] = flat[0] + value.dtype.type(1)
        elif np.isfinite(flat[0]):
            slack = 0.0 if bound is None else float(bound.reshape(-1)[0])
            with np.errstate(all="ignore"):
                flat[0] = flat[0] + 0.5 * (abs(flat[0]) + 1) + 2 * slack
        else:
            flat[0] = 0.0
        if value.dtype.kind != "f" or np.isfinite(flat[0] - value.reshape(-1)[0]) or \
                np.isnan(value.reshape(-1)[0]):
            if gc.compare(wrong, value, bound) is None:
                problems.append("compare accepts a wrong element %r for %r" % (flat[0], value.reshape(-1)[0]))
    if gc.compare(value, value, bound) is not None:
        problems.append("compare rejects the oracle's own result")
    return problems


def ulp_checks(state):
    """compare() must allow 1 ulp on exact results and not 2."""
    for dt in (np.float32, np.float64):
        x = np.array([1.0, -3.5, 1e-3, 0.0], dt)
        one = np.nextafter(x, dt(np.inf))
        two = np.nextafter(one, dt(np.inf))
        tap(state, gc.compare(one, x, None) is None, "compare: 1 ulp accepted (%s)" % np.dtype(dt))
        tap(state, gc.compare(two, x, None) is not None, "compare: 2 ulp rejected (%s)" % np.dtype(dt))
        tap(state, gc.compare(-x[:1], x[:1], None) is not None, "compare: sign flip rejected (%s)" % np.dtype(dt))
        tap(state, gc.compare(np.array([np.nan], dt), np.array([0.0], dt), None) is not None,
            "compare: NaN for a number rejected (%s)" % np.dtype(dt))
        tap(state, gc.compare(np.array([-0.0], dt), np.array([0.0], dt), None) is None,
            "compare: -0 equals +0 (%s)" % np.dtype(dt))
        tap(state, gc.compare(np.array([np.inf], dt), np.array([-np.inf], dt), None) is not None,
            "compare: wrong infinity rejected (%s)" % np.dtype(dt))
        big = np.array([2.0], dt)
        tap(state, gc.compare(-big, big, None) is not None, "compare: huge ulp distance rejected (%s)" % np.dtype(dt))
    tap(state, gc.compare(np.array([1.0], np.float32), np.array([1.0], np.float64), None) is not None,
        "compare: dtype mismatch rejected")


def literals(tree):
    if tree["op"] == "lit":
        return [tree]
    return [lit for a in tree.get("args", []) for lit in literals(a)]


def coverage(cases):
    seen = set()
    for case in cases:
        for op in gc.ops_in(case["tree"]):
            seen.add("op:" + op)
        for o in case["operands"]:
            seen.add("dtype:" + o["dtype"])
            seen.add("rank:%d" % len(o["shape"]))
            if 0 in o["shape"]:
                seen.add("size 0")
            if 1 in o["shape"]:
                seen.add("size 1")
            if o["source"]:
                seen.add("source:" + o["source"])
            s = o["strides"] or []
            if any(v < 0 for v in s):
                seen.add("negative stride")
            if any(v == 0 for v in s):
                seen.add("zero stride")
            if s and any(abs(s[k]) < abs(s[k + 1]) for k in range(len(s) - 1) if s[k] and s[k + 1]):
                seen.add("permuted strides")
        for lit in literals(case["tree"]):
            if isinstance(lit["value"], float):
                seen.add("float literal" + (" with exponent" if "e" in lit["text"] else ""))
            elif lit["value"] < 0:
                seen.add("negative int literal")
            elif lit["value"] >= 2**63:
                seen.add("int literal >= 2**63")
        if case["expr"] != gc.fmt(case["tree"]):
            seen.add("minimal parentheses")
        seen.add("operands:%d" % len(case["operands"]))
        if case["elements"] >= 2000:
            seen.add(">= 2000 elements")
        if case["inplace"]:
            seen.add("in-place")
        if case["expect_error"]:
            seen.add("expected error")
        if case["broadcast_error"]:
            seen.add("broadcast error")
        try:
            value, bound = gc.oracle(case)
            seen.add("result:" + gc.NAME_OF[value.dtype])
            if bound is not None:
                seen.add("transcendental bound")
        except gc.OracleError:
            pass
    want = {"op:" + op for op in gc.ALL_OPS} | {"op:lit", "op:operand"}
    want |= {"dtype:" + d for d in gc.DTYPES} | {"result:" + d for d in gc.DTYPES}
    want |= {"rank:%d" % r for r in range(7)} | {"operands:%d" % n for n in range(1, 6)}
    want |= {"size 0", "size 1", "negative stride", "zero stride", "permuted strides", ">= 2000 elements",
             "in-place", "expected error", "broadcast error", "float literal", "float literal with exponent",
             "negative int literal", "int literal >= 2**63", "minimal parentheses", "transcendental bound", "source:ones", "source:zeros"}
    return sorted(want - seen)


def self_check(opts):
    state = {"n": 0, "failed": 0}
    for text, arrays, want in spot_cases():
        spot_check(state, text, arrays, want)
    ulp_checks(state)
    cases = []
    for index in range(opts.count):
        try:
            case = gc.make_case(opts.seed, index)
        except Exception as e:  # a generator crash is a failed check, not a stop
            tap(state, False, "generator: case %d crashed: %r" % (index, e))
            continue
        cases.append(case)
        problems = check_case(case)
        tap(state, not problems, "generator: " + describe(case), problems)
    if cases:
        last = cases[-1]
        again = gc.make_case(opts.seed, last["index"])
        tap(state, again["expr"] == last["expr"] and all(
            np.array_equal(a["data"], b["data"], equal_nan=a["data"].dtype.kind == "f")
            for a, b in zip(again["operands"], last["operands"])), "generator: a case is reproducible")
    missing = coverage(cases)
    if len(cases) < 1000:
        print("# coverage is checked from 1000 cases on")
    else:
        tap(state, not missing, "generator: %d cases cover every operator, dtype, rank and layout" % len(cases),
            ["missing: " + ", ".join(missing)] if missing else [])
    print("1..%d" % state["n"])
    print("# self-check: %d passed, %d failed" % (state["n"] - state["failed"], state["failed"]))
    return 0 if state["failed"] == 0 else 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--case", type=int, help="run only this case, printing its commands")
    parser.add_argument("--verbose", action="store_true", help="print every command line")
    parser.add_argument("--self-check", action="store_true", help="check the generator and oracle, no bcgen")
    opts = parser.parse_args(argv)
    if opts.self_check:
        return self_check(opts)
    return run_all(opts)


if __name__ == "__main__":
    sys.exit(main())
