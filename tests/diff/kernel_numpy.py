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
A whole run ends with one more check, on the test itself: how many float
elements were checked tightly and how many loosely (Strength).

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
    return [[], ["--reference"], ["--unroll", rng.choice(choices)] + output_flags(case, rng)]


DTYPES = gc.DTYPES


def output_flags(case, rng):
    """An output view and dtype for the third run of about half the cases
    (issue 12): strides of the result in a random order of its dimensions,
    some reversed, some with gaps; and a random output dtype, which NumPy's
    casting='same_kind' allows or forbids (then bcgen must exit 1)."""
    if case["inplace"] or case["expect_error"] or rng.random() < 0.5:
        return []
    flags = []
    shape = case.get("result_shape")
    if shape is not None and rng.random() < 0.7:
        order = list(range(len(shape)))
        rng.shuffle(order)
        strides = [0] * len(shape)
        step = 1
        for d in reversed(order):
            gap = rng.choice([1, 1, 2, 3])
            strides[d] = step * gap * (-1 if rng.random() < 0.3 else 1)
            step *= max(shape[d], 1) * gap
        flags += ["--out-strides", "[%s]" % ",".join(map(str, strides))]
    if rng.random() < 0.6:
        flags += ["--out-dtype", rng.choice(DTYPES)]
    return flags


def expected_for(flags, expected, bound):
    """The oracle's result as the flags ask for it: cast to --out-dtype as
    NumPy's out= does, or None when NumPy's same_kind rule forbids it."""
    if "--out-dtype" not in flags or expected is None:
        return expected, bound
    want = np.dtype(gc.NP_DTYPE[flags[flags.index("--out-dtype") + 1]])
    if not np.can_cast(expected.dtype, want, casting="same_kind"):
        return None, None
    with np.errstate(all="ignore"):
        cast = expected.astype(want)
    if want.kind != "f":
        return cast, None
    return cast, bound if expected.dtype.kind == "f" else None


def command(bcgen, case, folder, flags):
    cmd = [bcgen, "run", case["expr"]]
    for op in case["operands"]:
        cmd += ["-i", gc.operand_spec(op, os.path.join(folder, op["name"] + ".npy"))]
    cmd += ["-o", os.path.join(folder, "out.npy")]
    if case["inplace"]:
        cmd += ["--inplace", case["inplace"]]
    return cmd + flags


def result_shape(case):
    """The broadcast shape of the operands the expression reads, or None."""
    try:
        return list(np.broadcast_shapes(*[tuple(o["shape"]) for o in gc.broadcast_operands(case)]))
    except Exception:  # the oracle reports the case's own problem
        return None


def describe(case):
    ops = " ".join("%s=%s[%s]%s" % (o["name"], o["dtype"], ",".join(map(str, o["shape"])),
                                    "@" if o["strides"] else "") for o in case["operands"])
    expr = case["expr"] if len(case["expr"]) <= 90 else case["expr"][:87] + "..."
    extra = " inplace=" + case["inplace"] if case["inplace"] else ""
    extra += " (expect error)" if case["expect_error"] else ""
    return "case %d: %s  %s%s" % (case["index"], expr, ops, extra)


def run_case(bcgen, seed, index, workdir, verbose):
    """Returns (passed, description, comment lines, how many float elements
    compare() checks each way: gc.bound_classes, or None)."""
    case = gc.make_case(seed, index)
    case["result_shape"] = result_shape(case)
    notes = []
    classes = None
    try:
        expected, bound = gc.oracle(case)
        if expected.dtype.kind == "f":
            classes = gc.bound_classes(expected, bound)
    except gc.OracleError as e:
        expected, bound = None, None
        if not case["expect_error"]:
            notes.append("numpy rejects this expression: %s" % e)
    except AssertionError as e:
        return False, describe(case), ["oracle: " + str(e)], None
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
        want, want_bound = expected_for(flags, expected, bound)
        if expected is not None and want is None:
            if proc.returncode != 1 or "same-kind" not in stderr:
                failures.append(("NumPy's same_kind rule forbids this output dtype, so bcgen "
                                 "must exit 1 naming it; got exit %d, stderr %r"
                                 % (proc.returncode, stderr), line))
            continue
        if expected is None:
            if proc.returncode != 1 or not stderr:
                failures.append(("numpy rejects it, so bcgen must exit 1 with a message; "
                                 "got exit %d, stderr %r" % (proc.returncode, stderr), line))
            continue
        if proc.returncode != 0:
            failures.append(("exit %d: %s" % (proc.returncode, stderr), line))
            continue
        if "--reference" not in flags and "note:" in proc.stderr:
            # the JIT fell back to the reference evaluator: the result may be
            # right, but the generated code was not what ran
            failures.append(("the JIT was not used: %s" % stderr, line))
            continue
        try:
            got = np.load(out)
        except Exception as e:  # a missing or malformed file is a failure, whatever it is
            failures.append(("cannot read %s: %s" % (out, e), line))
            continue
        problem = gc.compare(got, want, want_bound)
        if problem:
            failures.append((problem, line))
    for problem, line in failures:
        notes.append(problem)
        notes.append("  reproduce: " + line)
    if failures:
        notes.append("  regenerate: %s %s --seed %d --case %d" % (sys.executable, sys.argv[0], seed, index))
    elif not verbose:
        shutil.rmtree(folder, ignore_errors=True)
    return not failures, describe(case), notes, classes


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
    # a whole run also checks that its float checks were meaningful
    judge = opts.case is None and opts.count >= STRENGTH_MIN_CASES
    print("1..%d" % (len(indices) + judge))
    sys.stdout.flush()
    start = time.time()
    passed = failed = 0
    strength = Strength()
    with concurrent.futures.ThreadPoolExecutor(max_workers=opts.jobs) as pool:
        futures = [pool.submit(run_case, bcgen, opts.seed, i, workdir, verbose) for i in indices]
        for number, future in enumerate(futures, 1):
            try:
                ok, what, notes, classes = future.result()
            except Exception as e:  # a crash in one case must not hide the others
                ok, what, notes, classes = False, "case %d" % indices[number - 1], ["test crashed: %r" % e], None
            passed += ok
            failed += not ok
            strength.add(classes)
            print("%s %d - %s" % ("ok" if ok else "not ok", number, what))
            for n in notes:
                print("# " + n)
            sys.stdout.flush()
    if judge:
        problems = strength.problems()
        passed += not problems
        failed += bool(problems)
        print("%s %d - %s" % ("not ok" if problems else "ok", len(indices) + 1, strength.verdict()))
        for p in problems:
            print("# " + p)
    print("# " + strength.summary())
    print("# kernel_numpy seed %d: %d passed, %d failed in %.1fs" % (
        opts.seed, passed, failed, time.time() - start))
    return 0 if failed == 0 else 1


# ---- how strong the float checks were ------------------------------------------

STRENGTH_MIN_CASES = 1000     # fewer cases: too few float elements to judge
MAX_WEAK_SHARE = 0.01         # loose or unbounded elements, of all float elements
MAX_UNBOUNDED_SHARE = 0.001   # unbounded elements (class check only)
MAX_BLIND_SHARE = 0.01        # float results without one tightly checked element


class Strength:
    """Sums gc.bound_classes over a run's float results and judges whether
    the run's float checks meant something (the test of the test)."""

    def __init__(self):
        self.counts = dict.fromkeys(gc.CHECK_CLASSES, 0)
        self.results = 0
        self.blind = 0          # non-empty results with every element loose or unbounded

    def add(self, classes):
        if classes is None:
            return
        self.results += 1
        for k in gc.CHECK_CLASSES:
            self.counts[k] += classes[k]
        if sum(classes.values()) and classes["exact"] + classes["tight"] == 0:
            self.blind += 1

    def total(self):
        return sum(self.counts.values())

    def summary(self):
        c = self.counts
        return ("float elements: %d in %d results; tightly checked %d (%d within 1 ulp, %d within a "
                "carried bound <= half the value); loosely checked %d (%d within a larger bound, "
                "%d by class only)" % (self.total(), self.results, c["exact"] + c["tight"], c["exact"],
                                       c["tight"], c["loose"] + c["unbounded"], c["loose"], c["unbounded"]))

    def verdict(self):
        return "float checks are tight: %d of %d elements loose (< %g%%), %d unbounded, %d results unchecked" % (
            self.counts["loose"] + self.counts["unbounded"], self.total(), 100 * MAX_WEAK_SHARE,
            self.counts["unbounded"], self.blind)

    def problems(self):
        c, total = self.counts, max(self.total(), 1)
        out = []
        if self.results == 0:
            out.append("no float results at all")
        if c["loose"] + c["unbounded"] >= MAX_WEAK_SHARE * total:
            out.append("%d of %d float elements are checked loosely (limit %g%%)" % (
                c["loose"] + c["unbounded"], total, 100 * MAX_WEAK_SHARE))
        if c["unbounded"] > MAX_UNBOUNDED_SHARE * total:
            out.append("%d of %d float elements have no error bound (limit %g%%)" % (
                c["unbounded"], total, 100 * MAX_UNBOUNDED_SHARE))
        if self.blind > MAX_BLIND_SHARE * max(self.results, 1):
            out.append("%d of %d float results have no tightly checked element (limit %g%%)" % (
                self.blind, self.results, 100 * MAX_BLIND_SHARE))
        return out


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
        ("sqrt(a)", {"a": A([4, 9], i8)}, A([2, 3], np.float16)),
        ("sqrt(a)", {"a": A([4, 9], np.uint16)}, A([2, 3], f32)),
        ("sqrt(a)", {"a": A([4, 9], i32)}, A([2, 3], f64)),
        ("sqrt(a)", {"a": A([True, False])}, A([1, 0], np.float16)),
        ("floor(a)", {"a": A([4, -9], np.int16)}, A([4, -9], f32)),
        ("exp(a)", {"a": A([0], u8)}, A([1], np.float16)),
        ("a * b + c", {"a": A([1, 65504], np.float16), "b": A([2049, 2], np.float16),
                       "c": A([1, 0], np.float16)}, A([2050, np.inf], np.float16)),
        ("a + b", {"a": A([1], np.float16), "b": A([1], np.int16)}, A([2], f32)),
        ("a + b", {"a": A([1], np.float16), "b": A([1], np.uint8)}, A([2], np.float16)),
        ("a + 0.1", {"a": A([1], np.float16)}, A([1.0 + 0.0999755859375], np.float16)),
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
        # typed pair by pair as minimum(maximum(a, 449), b): bool with a weak
        # int is i64, then with u8 i64 (issue 13; promoting the three at once
        # rejected 449 for u8)
        ("clip(a, 449, b)", {"a": A([True]), "b": A([1], u8)}, A([1], np.int64)),
        ("clip(a, b, 4.625)", {"a": A([9], f32), "b": A([1], np.int16)}, A([4.625], f32)),
        ("clip(a, 1, b)", {"a": A([-3], i8), "b": A([1.0], f32)}, A([1.0], f32)),
        ("f32(a)", {"a": A([16777217], np.int64)}, A([16777216], f32)),
        # an operand the expression does not read takes no part in the
        # broadcast: a literal gives a scalar, as np.asarray(7) does
        ("7", {"a": A([1, 2, 3], u8)}, A(7, np.int64)),
        ("a + 1", {"a": A([1, 2], u8), "b": A([[1, 2, 3]], u8)}, A([2, 3], u8)),
        ("2.5", {"a": A(0, u8)}, A(2.5, f64)),
    ]


def tap(state, ok, what, notes=()):
    state["n"] += 1
    state["failed"] += not ok
    print("%s %d - %s" % ("ok" if ok else "not ok", state["n"], what))
    for n in notes:
        print("# " + n)


def spot_case(text, arrays):
    """A case for expression TEXT over the named ARRAYS (contiguous)."""
    names = list(arrays)
    operands = [{"name": n, "dtype": gc.NAME_OF[arrays[n].dtype], "shape": list(arrays[n].shape),
                 "strides": None, "zero_axes": [], "data": arrays[n], "source": None} for n in names]
    return {"operands": operands, "tree": gc.parse(text, names), "expr": text, "expect_error": False}


def spot_check(state, text, arrays, want):
    case = spot_case(text, arrays)
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
        shape = list(np.broadcast_shapes(*[tuple(o["shape"]) for o in gc.broadcast_operands(case)]))
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
            for o in gc.broadcast_operands(case):  # the others are not read
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
    problems += bound_problems(value, bound)
    return problems


def bound_problems(value, bound):
    """What is wrong with the oracle's error bound for VALUE (propagate's
    contract: float64, never NaN or negative, 0 or inf where VALUE is not
    finite)."""
    if bound is None:
        return []
    if value.dtype.kind != "f":
        return ["a bound on a %s result" % value.dtype]
    if bound.shape != value.shape or bound.dtype != np.float64:
        return ["bound %s %s for a result of shape %s" % (bound.dtype, bound.shape, value.shape)]
    problems = []
    if np.isnan(bound).any() or (bound < 0).any():
        problems.append("NaN or negative bound")
    odd = ~np.isfinite(value) & (bound != 0) & ~np.isinf(bound)
    if odd.any():
        problems.append("%d non-finite elements with a finite non-zero bound" % int(odd.sum()))
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


def element_classes(value, bound):
    """The CHECK_CLASSES entry of each element of VALUE, in order."""
    out = []
    for i in range(value.size):
        b = None if bound is None else bound.reshape(-1)[i:i + 1]
        counts = gc.bound_classes(value.reshape(-1)[i:i + 1], b)
        out.append([k for k in gc.CHECK_CLASSES if counts[k]][0])
    return out


def bound_checks(state):
    """propagate() on hand-made trees: each element's check class, so that
    a bound which blows up (inf - inf, 0 * inf, an unselected operand of
    maximum) or stays tight where it must not is caught."""
    A = np.array
    nan, inf = np.nan, np.inf
    table = [
        # maximum/minimum/clip take the bound of what they select
        ("maximum(log(a), b)", {"a": A([0.0, 2.0]), "b": A([0.5, 0.5])}, ["exact", "tight"]),
        ("minimum(exp(a), b)", {"a": A([1000.0, 1.0]), "b": A([3.0, 3.0])}, ["exact", "tight"]),
        ("clip(b, exp(a), 7)", {"a": A([-1000.0, 1.0]), "b": A([3.0, 3.0])}, ["exact", "exact"]),
        # cancellation after an inexact function is loose; Annex F points are exact
        ("exp(a) - exp(a)", {"a": A([1.3, 0.0])}, ["loose", "exact"]),
        ("tanh(a * 9) - 1.0", {"a": A([2.5, 5.0, 1.0])}, ["loose", "exact", "tight"]),
        # a divisor that may be zero leaves no bound; an exact zero does
        ("b / (exp(a) - exp(a))", {"a": A([1.3, 0.0]), "b": A([2.0, 2.0])}, ["unbounded", "exact"]),
        ("sin(a) / cos(b)", {"a": A([0.0, 1.0]), "b": A([0.0, 0.0])}, ["exact", "tight"]),
        # infinities and NaN from exact inputs are exact, never inf - inf
        ("exp(a) * b", {"a": A([1000.0, 1000.0, -1000.0]), "b": A([0.0, 2.0, inf])}, ["exact"] * 3),
        ("exp(a) - exp(b)", {"a": A([1000.0, inf]), "b": A([1000.0, 1.0])}, ["exact", "exact"]),
        ("exp(a) + b", {"a": A([1.0, 1.0]), "b": A([inf, nan])}, ["exact", "exact"]),
        ("(exp(a) * 0.5) * b", {"a": A([700.0, 1.0]), "b": A([1e300, 2.0])}, ["unbounded", "tight"]),
        ("f32(exp(a))", {"a": A([88.72, 89.0, 1.0])}, ["tight", "exact", "tight"]),
    ]
    for text, arrays, want in table:
        value, bound = gc.oracle(spot_case(text, arrays))
        got = element_classes(value, bound)
        problems = bound_problems(value, bound)
        tap(state, got == want and not problems, "bound: %s checks %s" % (text, ", ".join(want)),
            ["got %s, value %r, bound %r" % (got, value, bound)] + problems if got != want or problems else [])
    # compare() itself: bounded, overflowing and unbounded elements
    e = A([2.0, -3.0, 1e-3], np.float64)
    tight = A([1e-9, 1e-9, 1e-9])
    tap(state, gc.compare(e + 0.9e-9, e, tight) is None, "compare: within the bound accepted")
    tap(state, gc.compare(e + 3e-9, e, tight) is not None, "compare: beyond the bound rejected")
    tap(state, gc.compare(e, e, A([nan, 0.0, 0.0])) is not None, "compare: a NaN bound is an oracle error")
    big = A([3.3e38], np.float32)
    tap(state, gc.compare(A([inf], np.float32), big, A([2e37])) is None,
        "compare: overflow to inf accepted where the bound reaches past the largest float")
    tap(state, gc.compare(A([inf], np.float32), big, A([5e36])) is not None,
        "compare: overflow to inf rejected where the bound stays below the largest float")
    tap(state, gc.compare(A([-inf], np.float32), big, A([2e37])) is not None,
        "compare: overflow to the wrong infinity rejected")
    unbounded = A([inf, inf, inf])
    tap(state, gc.compare(e * 7, e, unbounded) is None, "compare: unbounded: another value of the same sign accepted")
    for what, got, expected in [("sign flip", -e, e), ("NaN for a number", A([nan, -3.0, 1e-3]), e),
                                ("inf for a number", A([inf, -3.0, 1e-3]), e),
                                ("a number for -inf", e, A([2.0, -3.0, -inf]))]:
        tap(state, gc.compare(got, expected, unbounded) is not None, "compare: unbounded: %s rejected" % what)
    # the generator draws a case again when the oracle cannot check it tightly
    cond = [("tanh(a * 9) - 1.0", {"a": A([2.5] * 20)}, False),
            ("b / (exp(a) - exp(a))", {"a": A([1.3] * 20), "b": A([2.0] * 20)}, False),
            ("exp(a) - exp(b)", {"a": A([1.3] * 20), "b": A([1.0] * 20)}, True),
            ("tanh(a * 9) - 1.0", {"a": A([2.5] + [0.5] * 19)}, True)]
    for text, arrays, want in cond:
        tap(state, gc.well_conditioned(spot_case(text, arrays)) == want,
            "generator: %s is %s" % (text, "kept" if want else "drawn again"))


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
            if isinstance(lit["value"], bool):
                seen.add("bool literal")
            elif isinstance(lit["value"], float):
                seen.add("float literal" + (" with exponent" if "e" in lit["text"] else ""))
            elif lit["value"] < 0:
                seen.add("negative int literal")
            elif lit["value"] >= 2**63:
                seen.add("int literal >= 2**63")
        if case["expr"] != gc.fmt(case["tree"]):
            seen.add("minimal parentheses")
        seen.add("operands:%d" % len(case["operands"]))
        inner = max([o["shape"][-1] for o in case["operands"] if o["shape"]] or [0])
        if case["long_run"] and inner >= 4096:
            seen.add("long run, multiple of 64" if inner % 64 == 0 else "long run with remainder")
            for o in case["operands"]:
                s = o["strides"] or []
                if o["shape"] and o["shape"][-1] == inner and s:
                    seen.add("long run, stride 0" if s[-1] == 0 else "long run, reversed" if s[-1] < 0
                             else "long run, strided" if s[-1] > 1 else "long run, unit stride")
                if o["shape"][-1:] == [1] or not o["shape"]:
                    seen.add("long run, broadcast operand")
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
             "negative int literal", "int literal >= 2**63", "bool literal", "minimal parentheses", "transcendental bound", "source:ones", "source:zeros"}
    want |= {"long run, multiple of 64", "long run with remainder", "long run, stride 0", "long run, reversed",
             "long run, strided", "long run, unit stride", "long run, broadcast operand"}
    return sorted(want - seen)


def self_check(opts):
    state = {"n": 0, "failed": 0}
    strength = Strength()
    for text, arrays, want in spot_cases():
        spot_check(state, text, arrays, want)
    ulp_checks(state)
    bound_checks(state)
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
        try:
            value, bound = gc.oracle(case)
            if value.dtype.kind == "f":
                strength.add(gc.bound_classes(value, bound))
        except (gc.OracleError, AssertionError):
            pass                # check_case has judged it
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
        longs = sum(c["long_run"] for c in cases)
        tap(state, 0.02 * len(cases) <= longs <= 0.05 * len(cases),
            "generator: %d of %d cases have an innermost dimension >= 4096" % (longs, len(cases)))
        retried = sum(c["attempt"] > 0 for c in cases)
        tap(state, retried <= 0.02 * len(cases), "generator: %d of %d cases drawn again (limit 2%%)" % (
            retried, len(cases)))
    if len(cases) >= STRENGTH_MIN_CASES:
        problems = strength.problems()
        tap(state, not problems, "oracle: " + strength.verdict(), problems)
    print("# " + strength.summary())
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
