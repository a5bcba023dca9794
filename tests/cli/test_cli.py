#!/usr/bin/env python3
"""The bcgen command line contract for explain, emit and run: outputs, exit
codes (0 ok, 1 broadcast/type/compile error, 2 usage/parse error) and the
messages users see on stderr."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

BUILD = os.environ.get("BUILD", "build")
BCGEN = os.path.join(BUILD, "bcgen")
count = 0
failed = 0


def bcgen(*args):
    return subprocess.run([BCGEN] + list(args), capture_output=True, text=True)


def check(what, ok, detail=""):
    global count, failed
    count += 1
    if ok:
        print(f"ok {count} - {what}")
    else:
        failed += 1
        print(f"not ok {count} - {what}")
        for line in str(detail).splitlines()[:20]:
            print("# " + line)


def expect(args, code, stderr_has=None, stdout_has=None, what=None):
    r = bcgen(*args)
    ok = r.returncode == code
    if stderr_has is not None:
        ok = ok and stderr_has in r.stderr
    if stdout_has is not None:
        ok = ok and stdout_has in r.stdout
    if code != 0 and "--json" not in args:
        ok = ok and r.stdout == ""  # errors never print on stdout
    check(what or " ".join(args), ok,
          f"exit {r.returncode} (want {code})\nstdout: {r.stdout}\nstderr: {r.stderr}")
    return r


def main():
    if not os.access(BCGEN, os.X_OK):
        print(f"not ok 1 - {BCGEN} is not built")
        return 1
    # help and dispatch
    expect(["--help"], 0, stdout_has="usage: bcgen COMMAND")
    expect([], 2, stderr_has="usage: bcgen COMMAND")
    expect(["frobnicate"], 2, stderr_has="unknown command 'frobnicate'")
    for cmd in ("shape", "explain", "emit", "run"):
        expect([cmd, "--help"], 0, stdout_has="usage: bcgen " + cmd)
    # -- ends the options, so an expression may start with '-' (issue 9, newcomer's audit)
    expect(["run", "-i", "a=f32[3]=range", "--", "-a"], 0, stdout_has="[-0. -1. -2.]")
    expect(["run", "-i", "a=i32[3]=range", "--", "-a + 1"], 0, stdout_has="[ 1  0 -1]")
    expect(["explain", "-i", "a=f32[3]", "--", "-a"], 0, stdout_has="(-a)")
    expect(["emit", "-i", "a=f32[3]", "--name", "neg", "--", "-a"], 0, stdout_has="void neg(")
    expect(["emit", "-i", "a=f32[3]", "--jit", "--", "-a"], 0, stdout_has="bcg_kernel")
    expect(["run", "--", "-a", "-i", "a=f32[3]=ones"], 2,
           stderr_has="after -- every argument is the expression",
           what="after -- everything is positional (POSIX)")
    expect(["run", "-a", "-i", "a=f32[3]=ones"], 2, stderr_has="unknown option '-a'")
    for cmd in ("explain", "emit", "run", "aot"):
        r = bcgen(cmd, "--help")
        check(f"{cmd} --help tells about --", "  --  " in r.stdout and "'-a'" in r.stdout,
              r.stdout)
    expect(["run", "foo(a)", "-i", "a=f32[3]=ones"], 2,
           stderr_has="unknown function 'foo' at column 1 (`bcgen functions` lists every function)",
           what="unknown function lists the known ones")
    # explain on a broadcast error: the aligned table with the failing dimension marked
    r = expect(["explain", "a * b + c", "-i", "a=f32[5,2,4,1]", "-i", "b=f32[3,1,1]", "-i",
                "c=f32[]"], 1, stderr_has="cannot broadcast b (3,1,1) against a (5,2,4,1)")
    lines = r.stderr.splitlines()
    marker = [l for l in lines if "^ dimension 1: sizes 2 and 3 do not broadcast" in l]
    row_a = [l for l in lines if l.startswith("  a ")]
    check("explain on a broadcast error marks the failing dimension under its column",
          len(marker) == 1 and len(row_a) == 1
          and row_a[0][marker[0].index("^")] == "2"
          and lines.index(marker[0]) < len(lines) - 1
          and lines[-1].startswith("bcgen explain: cannot broadcast"), r.stderr)
    r = expect(["explain", "a + b", "-i", "a=f32[1,3]", "-i", "b=f32[2,3]", "--inplace", "a"], 1,
               stderr_has="^ dimension 0: a cannot change its size in place")
    # make test-cli builds only what the suite needs, not the sanitizer trees (issue 9)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run(["make", "-n", "-C", root, "test-cli", "BUILD=" + os.path.abspath(BUILD)],
                       capture_output=True, text=True)
    check("make -n test-cli plans no sanitizer or fuzzer build",
          r.returncode == 0 and "run.sh cli" in r.stdout
          and not any(w in r.stdout for w in ("fsanitize", "safety-builds", "/asan", "/tsan")),
          r.stdout[-1500:] + r.stderr)
    # operand specs
    expect(["explain", "a"], 2, stderr_has="no operands given")
    expect(["explain", "-i", "a=f32[3]"], 2, stderr_has="no expression given")
    expect(["explain", "a", "-i", "a"], 2, stderr_has="has no '='")
    expect(["explain", "a", "-i", "1a=f32[3]"], 2, stderr_has="is not a name")
    expect(["explain", "a", "-i", "a=f99[3]"], 2, stderr_has="unknown dtype 'f99'")
    expect(["explain", "a", "-i", "a=f32"], 2, stderr_has="has no [SHAPE]")
    expect(["explain", "a", "-i", "a=f32[3"], 2, stderr_has="no closing ']'")
    expect(["explain", "a", "-i", "a=f32[-3]"], 2, stderr_has="negative")
    expect(["explain", "a", "-i", "a=f32[3]@[1,2]"], 2, stderr_has="2 strides for a shape of rank 1")
    expect(["explain", "a", "-i", "a=f32[3]@1"], 2, stderr_has="strides are written")
    expect(["explain", "a", "-i", "a=f32[3]=ones"], 2, stderr_has="only for `bcgen run`")
    expect(["run", "a", "-i", "a=f32[3]"], 2, stderr_has="has no data")
    expect(["explain", "a", "-i", "a=f32[3]", "-i", "a=f32[3]"], 2, stderr_has="given twice")
    expect(["explain", "a", "-i", "a=f32[3]", "--inplace", "b"], 2, stderr_has="not an operand")
    expect(["explain", "a", "-i", "a=f32[3]", "--bogus"], 2, stderr_has="unknown option '--bogus'")
    expect(["explain", "a", "-i", "a=f32[3]", "--axis", "x"], 2, stderr_has="--axis needs an integer")
    expect(["emit", "a", "-i", "a=f32[3]", "--unroll", "7x"], 2, stderr_has="--unroll takes")
    expect(["emit", "a", "-i", "a=f32[3]", "--name", "a b"], 2, stderr_has="--name needs a C identifier")
    # expression errors: column and caret
    r = expect(["explain", "a + * b", "-i", "a=f32[3]", "-i", "b=f32[3]"], 2, what="parse error exits 2")
    check("parse error shows a caret under the column", "^" in r.stderr, r.stderr)
    expect(["explain", "a + d", "-i", "a=f32[3]"], 2, stderr_has="unknown name", what="unknown name")
    expect(["explain", "a & 1.5", "-i", "a=f32[3]"], 1, what="bitwise op on floats is a type error")
    expect(["explain", "a + 300", "-i", "a=i8[3]"], 1, stderr_has="300", what="literal does not fit")
    expect(["explain", "a", "-i", "a=f64[2305843009213693952]"], 1,
           stderr_has="INT64_MAX bytes", what="result byte size overflow")
    expect(["explain", "a", "-i", "a=f32[" + ",".join(["1"] * 65) + "]"], 2,
           stderr_has="64", what="rank over the limit")
    expect(["emit", "a + 1", "-i", "a=i8[4]@[4611686018427387904]"], 1,
           stderr_has="beyond a 64-bit byte offset", what="stride overflow")
    # each end fits in a byte offset, the span between them does not (a
    # fuzz_aot find: gen/aot.c multiplied it for the _BYTES macro)
    expect(["aot", "-k", "f=a + b", "-i", "a=f64[2,2]@[-576460752303423488,576460752303423488]",
            "-i", "b=f64[2,2]", "-o", "/dev/null"], 1,
           stderr_has="more than a 64-bit byte count holds", what="stride span overflow")
    expect(["run", "a * 2", "--inplace", "a", "-i", "a=i32[3,4]@[0,1]=range"], 1,
           stderr_has="overlapping elements", what="in-place target with a 0 stride")
    # broadcast errors
    expect(["explain", "a + b", "-i", "a=f32[5,2,4,1]", "-i", "b=f32[3,1,1]"], 1,
           stderr_has="cannot broadcast b (3,1,1) against a (5,2,4,1): dimension 1 has size 3 in b and 2 in a")
    expect(["explain", "a + b", "-i", "a=f32[3,1]", "-i", "b=f32[3,4]", "--inplace", "a"], 1,
           stderr_has="in-place")
    expect(["explain", "a / 2", "-i", "a=i32[3]", "--inplace", "a"], 1,
           stderr_has="f64 to i32 is not a same-kind cast", what="in-place cannot change the dtype")
    # explain output
    r = expect(["explain", "a * b + c", "-i", "a=f32[5,3,4,1]", "-i", "b=f32[3,1,1]", "-i", "c=f32[]"], 0)
    for piece in ("result: (5, 3, 4, 1) f32, 60 elements", "stretched from 1", "missing and padded",
                  "typed expression:", "plan:"):
        check(f"explain shows '{piece}'", piece in r.stdout, r.stdout)
    r = expect(["explain", "a + b", "-i", "a=f32[4,3]", "-i", "b=f32[3,4]"], 1)
    r = expect(["explain", "a + b", "-i", "a=f32[12]", "-i", "b=f32[3,4]", "--json"], 1)
    check("explain --json error is one object", json.loads(r.stdout).get("error", "").startswith("cannot broadcast"), r.stdout)
    r = expect(["explain", "a + b", "-i", "a=f32[2,3]", "-i", "b=f32[3]", "--json"], 0)
    try:
        j = json.loads(r.stdout)
        check("explain --json has shape, dtype, plan",
              j["shape"] == [2, 3] and j["dtype"] == "f32" and "loops" in j["plan"], r.stdout)
    except ValueError as e:
        check("explain --json parses", False, f"{e}\n{r.stdout}")
    r = bcgen("explain", "a + b", "-i", "a=f32[1,6]", "-i", "b=f32[6,1]", "--warn-legacy")
    check("--warn-legacy warns on same-size different shapes", "warning" in r.stderr, r.stderr)
    # --warn-legacy in run and emit too (issue 9, newcomer's audit), and only when the
    # old pointwise rule would give something else
    legacy = ("warning: a (4,1) and b (4,) have different shapes but the same number of "
              "elements (4): they broadcast to (4,4) (16 elements)")
    for argv in (["run", "a + b", "-i", "a=f32[4,1]=range", "-i", "b=f32[4]=ones"],
                 ["emit", "a + b", "-i", "a=f32[4,1]", "-i", "b=f32[4]"],
                 ["emit", "a + b", "-i", "a=f32[4,1]", "-i", "b=f32[4]", "--jit"],
                 ["run", "a + b", "-i", "a=f32[4,1]=range", "-i", "b=f32[4]=ones",
                  "--reference"]):
        cmd = argv[0]
        expect(argv + ["--warn-legacy"], 0, stderr_has=f"bcgen {cmd}: {legacy}",
               what=" ".join(argv[:1] + argv[2:]) + " --warn-legacy prints the legacy warning")
        r = bcgen(*argv)
        check(" ".join(argv) + " without --warn-legacy: no warning", "warning" not in r.stderr,
              r.stderr)
    # an operand the expression does not read takes no part in the broadcast
    # (NumPy's result for the same expression), and the CLI says so
    r = expect(["run", "a + 1", "-i", "a=f32[3]=range", "-i", "b=f32[4,3]=ones"], 0,
               stdout_has="[1. 2. 3.]", stderr_has="operand b is not read by the expression",
               what="run: an unread operand does not widen the result, with a warning")
    expect(["run", "a + 1", "-i", "a=f32[3]=range", "-i", "b=f32[5]=ones"], 0,
           stdout_has="[1. 2. 3.]", what="run: an unread operand that would not broadcast is no error")
    expect(["run", "1 + 2", "-i", "a=f32[3]=range"], 0, stdout_has="3",
           what="run: an expression of literals gives a scalar, as in NumPy")
    expect(["explain", "a + 1", "-i", "a=f32[3]", "-i", "b=f32[4,3]"], 0,
           stdout_has="(not read by the expression", what="explain lists the unread operand")
    expect(["run", "a + 1", "-i", "a=f32[3]=range", "-i", "b=f32[-1]=ones"], 2,
           what="an unread operand is still validated")
    for argv in (["run", "a + b", "-i", "a=f32[1,4]=range", "-i", "b=f32[4]=ones"],
                 ["emit", "a + b", "-i", "a=f32[1,4]", "-i", "b=f32[4]"],
                 ["explain", "a + b", "-i", "a=f32[1,4]", "-i", "b=f32[4]"]):
        r = bcgen(*argv, "--warn-legacy")
        check(f"{argv[0]} (1,4) with (4): the old rule agrees, no legacy warning",
              r.returncode == 0 and "warning" not in r.stderr and "warning" not in r.stdout,
              r.stderr)
    # emit
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.c")
        expect(["emit", "x + y", "-i", "x=i32[4]", "-i", "y=i32[]", "--name", "add4", "-o", path], 0)
        src = open(path).read() if os.path.exists(path) else ""
        check("emit -o writes the kernel", "add4" in src and "#include" not in src, src[:500])
        r = expect(["emit", "secret + 1", "-i", "secret=f32[4]"], 0)
        check("emitted C never contains operand names", "secret" not in r.stdout, r.stdout[:300])
        # run
        r = expect(["run", "a + b", "-i", "a=i32[2,3]=range", "-i", "b=i32[3]=ones"], 0)
        check("run prints like numpy", r.stdout.strip() == "[[1 2 3]\n [4 5 6]]", r.stdout)
        out = os.path.join(tmp, "out.npy")
        a = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5) / 3
        np.save(os.path.join(tmp, "a.npy"), a)
        np.save(os.path.join(tmp, "af.npy"), np.asfortranarray(a))
        np.save(os.path.join(tmp, "abig.npy"), a.astype(">f4"))
        for f in ("a.npy", "af.npy", "abig.npy"):
            expect(["run", "a * 2 - b", "-i", f"a=f32[3,4]={tmp}/{f}", "-i", "b=f32[4]=range", "-o", out], 0)
            got = np.load(out) if os.path.exists(out) else None
            check(f"run reads {f} and writes -o", got is not None and got.dtype == np.float32 and
                  np.array_equal(got, a * 2 - np.arange(4, dtype=np.float32)), got)
        expect(["run", "a", "-i", f"a=f64[3,4]={tmp}/a.npy"], 1, stderr_has="does not convert data")
        expect(["run", "a", "-i", f"a=f32[4,3]={tmp}/a.npy"], 1, stderr_has="does not convert data")
        expect(["run", "a", "-i", f"a=f32[3,4]={tmp}/missing.npy"], 1)
        expect(["run", "a", "-i", "a=f32[3]=bogus"], 2, stderr_has="unknown data source")
        # strided and in place
        at = np.arange(12, dtype=np.float64).reshape(3, 4)
        np.save(os.path.join(tmp, "at.npy"), at)
        expect(["run", "a + 1", "-i", f"a=f64[3,4]@[1,3]={tmp}/at.npy", "-o", out], 0)
        check("run lays out strided operands", np.array_equal(np.load(out), at + 1))
        expect(["run", "a + 1", "-i", f"a=f64[3,4]@[-4,-1]={tmp}/at.npy", "-o", out], 0)
        check("run with negative strides", np.array_equal(np.load(out), at + 1))
        expect(["run", "a * b", "-i", f"a=f64[3,4]={tmp}/at.npy", "-i", "b=f64[4]=range",
                "--inplace", "a", "-o", out], 0)
        check("run --inplace", np.array_equal(np.load(out), at * np.arange(4)))
        for mode in ("--reference",):
            expect(["run", "a * b", "-i", f"a=f64[3,4]={tmp}/at.npy", "-i", "b=f64[4]=range", mode, "-o", out], 0)
            check(f"run {mode}", np.array_equal(np.load(out), at * np.arange(4)))
        r = expect(["run", "a", "-i", "a=f32[2]=ones", "--time"], 0)
        check("run --time reports compile and run times", "compile" in r.stderr and "run" in r.stderr, r.stderr)
        # the JIT's own source, its options, threads
        r = expect(["emit", "a + b", "-i", "a=f32[4096,4096]", "-i", "b=f32[4096]", "--jit"], 0)
        check("emit --jit shows microkernel tiles with streaming stores (past the last-level cache)",
              "bcg_mk_add_f32_nt(" in r.stdout and "bcg_mk_fence();" in r.stdout and
              "written with streaming stores" in r.stdout, r.stdout[-1500:])
        r = expect(["emit", "a + b", "-i", "a=f32[4096,4096]", "-i", "b=f32[4096]", "--jit",
                    "--stream", "off"], 0)
        check("emit --jit --stream off: plain stores",
              "bcg_mk_add_f32(" in r.stdout and "_nt" not in r.stdout and "fence" not in r.stdout,
              r.stdout[-1500:])
        r = expect(["explain", "a + b", "-i", "a=f32[4096,4096]", "-i", "b=f32[4096]",
                    "--stream", "off"], 0)
        check("explain --stream off: the JIT form with plain stores",
              "bcg_mk_add_f32" in r.stdout and "streaming" not in r.stdout, r.stdout[-1500:])
        r = expect(["explain", "a + b", "-i", "a=f32[3,2000]", "-i", "b=f32[2000]", "--stream", "on"], 0)
        check("explain --stream on: streaming on a small output",
              "bcg_mk_add_f32_nt" in r.stdout and "fence" in r.stdout, r.stdout[-1500:])
        r = expect(["emit", "a + b", "-i", "a=f32[3,2000]", "-i", "b=f32[2000]", "--jit",
                    "--stream", "on"], 0)
        check("emit --jit --stream on: streaming on a small output",
              "bcg_mk_add_f32_nt(" in r.stdout and "bcg_mk_fence();" in r.stdout, r.stdout[-1500:])
        r = expect(["emit", "a - b", "-i", "a=i16[3,128]", "-i", "b=i16[128]", "--jit",
                    "--stream", "on"], 0)
        check("emit --jit: short runs of one operation are one rows call",
              "bcg_mk_sub_i16_rows(out, 128, in0, 1, 128, in1, 1, 0, 128, 3, 1);" in r.stdout
              and "bcg_mk_fence();" in r.stdout, r.stdout[-1500:])
        r = expect(["emit", "a - b", "-i", "a=i16[3,100]", "-i", "b=i16[100]", "--jit",
                    "--stream", "on"], 0)
        check("emit --jit --stream on: runs that are not whole cache lines store plainly",
              "_nt" not in r.stdout and "bcg_mk_fence" not in r.stdout, r.stdout[-1500:])
        r = expect(["emit", "a + b", "-i", "a=f32[3,100]", "-i", "b=f32[100]"], 0)
        check("emit without --jit: plain C, no microkernels", "bcg_mk_" not in r.stdout,
              r.stdout[-800:])
        expect(["emit", "a", "-i", "a=f32[3]", "--stream", "on"], 2, stderr_has="apply to --jit only")
        expect(["emit", "a", "-i", "a=f32[3]", "--jit", "--stream", "sometimes"], 2,
               stderr_has="--stream takes auto, on or off, not 'sometimes'")
        expect(["emit", "a", "-i", "a=f32[3]", "--jit", "--name", "k"], 2, stderr_has="--name")
        expect(["emit", "a", "-i", "a=f32[3]", "--jit", "--backend", "gcc"], 2,
               stderr_has="--backend takes tcc or cc, not 'gcc'")
        expect(["run", "a", "-i", "a=f32[3]=ones", "--threads", "0"], 2,
               stderr_has="--threads needs a count from 1 to 64, not '0'")
        expect(["run", "a", "-i", "a=f32[3]=ones", "--threads", "2", "--reference"], 2,
               stderr_has="--reference runs on one")
        big = np.arange(300 * 301, dtype=np.float32).reshape(300, 301)
        np.save(os.path.join(tmp, "big.npy"), big)
        for extra in (["--threads", "2"], ["--threads", "3", "--stream", "on"],
                      ["--stream", "off"], ["--backend", "cc"]):
            expect(["run", "a * b - 1", "-i", f"a=f32[300,301]={tmp}/big.npy", "-i",
                    "b=f32[301]=range", "-o", out] + extra, 0)
            want = big * np.arange(301, dtype=np.float32) - np.float32(1)
            check("run " + " ".join(extra) + " gives NumPy's result",
                  np.array_equal(np.load(out), want))
        # bcgen functions lists the table's functions (issue 13)
        r = expect(["functions"], 0, stdout_has="arcsin(x)")
        check("bcgen functions lists every table function", all(
            f + "(" in r.stdout for f in ("sqrt", "log1p", "erfc", "rint", "where", "clip")), r.stdout)
        expect(["functions", "--json"], 0, stdout_has='"name": "expm1"')
        # output views and dtypes (issue 12): the contract of --out-strides
        # and --out-dtype on run, emit and explain
        for extra in ([], ["--threads", "2"], ["--reference"], ["--backend", "cc"]):
            expect(["run", "a * b - 1", "-i", f"a=f32[300,301]={tmp}/big.npy", "-i",
                    "b=f32[301]=range", "-o", out, "--out-strides", "[-1,300]",
                    "--out-dtype", "f64"] + extra, 0)
            want = (big * np.arange(301, dtype=np.float32) - np.float32(1)).astype(np.float64)
            got = np.load(out)
            check("run --out-strides [-1,300] --out-dtype f64 " + " ".join(extra) +
                  " gives NumPy's out= result", got.dtype == np.float64 and np.array_equal(got, want))
        expect(["run", "a + 1", "-i", "a=f32[3]=ones", "--out-dtype", "i32"], 1,
               stderr_has="from f32 to the output dtype i32: not a same-kind cast")
        expect(["run", "a + 1", "-i", "a=f32[3,2]=ones", "--out-strides", "0,1"], 1,
               stderr_has="output stride 0 in dimension 0 of size 3")
        expect(["run", "a + 1", "-i", "a=f32[3,2]=ones", "--out-strides", "[1]"], 1,
               stderr_has="output strides are given for rank 1; the result (3, 2) has rank 2")
        expect(["run", "a + 1", "-i", "a=f32[3]=ones", "--out-strides", "x"], 2,
               stderr_has="--out-strides needs strides in elements")
        expect(["run", "a + 1", "-i", "a=f32[3]=ones", "--out-dtype", "f16x"], 2,
               stderr_has="--out-dtype needs a dtype")
        expect(["run", "a + b", "-i", "a=i8[3]=ones", "-i", "b=f64[3]=ones", "--inplace", "a"], 1,
               stderr_has="f64 to i8 is not a same-kind cast")
        expect(["run", "a + b", "-i", "a=f32[3]=ones", "-i", "b=f64[3]=ones", "--inplace", "a"], 0,
               stdout_has="[2. 2. 2.]")
        expect(["explain", "a + 1", "-i", "a=u8[2,3]", "--out-strides", "1,2", "--out-dtype",
                "i16"], 0, stdout_has="output dtype: i16, cast on store from u8")
        expect(["emit", "a + 1", "-i", "a=u8[2,3]", "--out-strides", "1,2"], 0,
               stdout_has="a view with strides (1,2)")
    # programs of several outputs (issue 12 part 3): keyed output options
    prog = "y = g * a; s = y"
    ops = ["-i", "g=f32[2,3]=range", "-i", "a=f32[3]=range"]
    expect(["run", prog] + ops + ["--reduce", "s=sum", "--to", "s=a"], 0,
           stdout_has="s = [ 0.  5. 14.]")
    expect(["run", prog] + ops + ["--reduce", "s=sum", "--to", "s=a", "--reference"], 0,
           stdout_has="y = [[ 0.  1.  4.]")
    expect(["run", prog] + ops + ["--reduce", "sum", "--to", "a"], 2,
           stderr_has="--reduce: say which statement it is for, as OPTION NAME=VALUE")
    expect(["run", prog] + ops + ["--reduce", "y=sum", "--to", "y=a"], 2,
           stderr_has="statement s uses y, whose output is a reduction (sum)")
    expect(["run", prog] + ops + ["--out-dtype", "s=i8"], 1,
           stderr_has="statement s: cannot cast the result from f32 to the output dtype i8")
    expect(["run", "y = g; y = a"] + ops, 2, stderr_has="statement name y is given twice")
    expect(["run", "y = z * 2; z = a"] + ops, 2, stderr_has="z, which is not an earlier statement")
    expect(["run", "y = g * a"] + ops + ["--out-dtype", "f64"], 0, stdout_has="y = [[ 0.  1.  4.]")
    expect(["explain", prog] + ["-i", "g=f32[2,3]", "-i", "a=f32[3]", "--reduce", "s=max",
                                "--to", "s=a"], 0,
           stdout_has="Fused program: one kernel computes the 2 outputs in one pass")
    expect(["explain", prog] + ["-i", "g=f32[2,3]", "-i", "a=f32[3]", "--reduce", "s=max",
                                "--to", "s=a", "--no-fuse"], 0,
           stdout_has="Output s (statement 2 of 2): s = y")
    expect(["explain", prog] + ["-i", "g=f32[2,3]", "-i", "a=f32[3]", "--reduce", "s=max",
                                "--to", "s=a", "--no-fuse"], 0,
           stdout_has="Not fused: separate kernels were asked for")
    expect(["explain", prog + "; t = a * 2"] + ["-i", "g=f32[2,3]", "-i", "a=f32[3]"], 0,
           stdout_has="Not fused: statement t iterates over (3,), statement y over (2, 3)")
    expect(["explain", prog] + ["-i", "g=f32[2,3]", "-i", "a=f32[3]", "--json"], 0,
           stdout_has='"fused": true')
    # an error in a later statement: the error object is the whole document
    r = subprocess.run([BCGEN, "explain", "y = g * 2; t = a + c", "-i", "g=f32[2,3]", "-i",
                        "a=f32[3]", "-i", "c=f32[4]", "--json"], capture_output=True, text=True)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        doc = {}
    check("explain --json PROGRAM with an error in statement 2 is one error document",
          r.returncode == 1 and list(doc) == ["error"] and
          doc["error"].startswith("statement t: cannot broadcast"), r.stdout[:300])
    # several reductions fuse into one kernel when they reduce the same dimensions
    expect(["explain", "s1 = g * a; s2 = g", "-i", "g=f32[2,3]", "-i", "a=f32[2,3]", "--reduce",
            "s1=sum", "--out-shape", "s1=[3]", "--reduce", "s2=max", "--out-shape", "s2=[1,3]"], 0,
           stdout_has="output s2 = g: in2, its max accumulated in the same loop nest")
    expect(["emit", prog, "-i", "g=f32[2,3]", "-i", "a=f32[3]", "--name", "fwd"], 0,
           stdout_has="void fwd(void *const *out, const void *const *in)")
    expect(["emit", prog, "-i", "g=f32[2,3]", "-i", "a=f32[3]", "--jit"], 2,
           stderr_has="a program of statements is emitted as plain C")
    with tempfile.TemporaryDirectory() as work:
        expect(["run", prog] + ops + ["-o", "y=" + os.path.join(work, "y.npy"), "--reduce",
                                      "s=prod", "--out-shape", "s=[]"], 0,
               stdout_has="s = 0.0", what="run PROGRAM: -o for one output, the other printed")
        check("run PROGRAM -o y=FILE writes y", np.array_equal(
            np.load(os.path.join(work, "y.npy")),
            np.arange(6, dtype=np.float32).reshape(2, 3) * np.arange(3, dtype=np.float32)))
    print(f"# {count - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
