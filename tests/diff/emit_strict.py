#!/usr/bin/env python3
"""Every kernel the differential test runs must also be valid C99 for people
and firmware: this emits the C for the first cases of the differential
test's generator (same seed) and compiles each with gcc and clang under
-std=c99 -Wall -Wextra -Werror -pedantic, in both looped and fully unrolled
form.  --count and --seed choose the cases."""
import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _gen_cases as gc  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
BCGEN = os.path.join(BUILD, "bcgen")
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1", "-c", "-o", "/dev/null"]


def emit_args(case, unroll):
    args = [BCGEN, "emit", case["expr"]]
    for op in case["operands"]:
        spec = "%s=%s[%s]" % (op["name"], op["dtype"], ",".join(str(d) for d in op["shape"]))
        if op["strides"] is not None:
            spec += "@[%s]" % ",".join(str(s) for s in op["strides"])
        args += ["-i", spec]
    if case["inplace"]:
        args += ["--inplace", case["inplace"]]
    return args + ["--unroll", unroll]


def check(case, unroll, compilers, tmp):
    run = subprocess.run(emit_args(case, unroll), capture_output=True, text=True)
    if case["expect_error"]:
        return run.returncode != 0, "expected an error, got exit %d" % run.returncode
    if run.returncode != 0:
        return False, "bcgen emit failed: " + run.stderr.strip()
    path = os.path.join(tmp, "k%d_%s.c" % (case["index"], unroll))
    with open(path, "w") as f:
        f.write(run.stdout)
    for cc in compilers:
        comp = subprocess.run([cc] + STRICT + [path], capture_output=True, text=True)
        if comp.returncode != 0 or comp.stderr:
            return False, "%s: %s" % (cc, (comp.stderr or "").strip()[:1500])
    return True, ""


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=120)
    parser.add_argument("--jobs", type=int, default=2)
    opts = parser.parse_args()
    if not os.access(BCGEN, os.X_OK):
        print("not ok 1 - %s is not built" % BCGEN)
        return 1
    compilers = [c for c in ("gcc", "clang") if shutil.which(c)]
    if len(compilers) < 2:
        print("not ok 1 - gcc and clang are both needed (found %s)" % compilers)
        return 1
    jobs = []
    for index in range(opts.count):
        case = gc.make_case(opts.seed, index)
        # Full unrolling only where the JIT's default would consider it.
        jobs.append((case, "none"))
        jobs.append((case, "full" if case["elements"] <= 256 else "4"))
    failed = 0
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(opts.jobs) as pool:
        results = pool.map(lambda j: check(j[0], j[1], compilers, tmp), jobs)
        for n, ((case, unroll), (ok, why)) in enumerate(zip(jobs, results), 1):
            what = "case %d --unroll %s: %s" % (case["index"], unroll, case["expr"][:80])
            if ok:
                print("ok %d - %s" % (n, what))
            else:
                failed += 1
                print("not ok %d - %s" % (n, what))
                for line in why.splitlines()[:15]:
                    print("# " + line)
    print("# emit_strict: %d passed, %d failed" % (len(jobs) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
