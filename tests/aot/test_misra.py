#!/usr/bin/env python3
"""MISRA C:2012 on the AOT pairs (issue 14, item 3), with Debian's cppcheck
and its MISRA addon.

A sweep of pairs covers every dtype (bool, i8 ... u64, f16, bf16, f32, f64)
and every form: fully unrolled, plain loops (one dtype of each kind), grouped loops with
--restrict, --math double, reductions of every kind, strided operands
and outputs, casts on store, in-place kernels, rank-0 operands, per-kernel
--unroll, the f16 helpers both portable and native (_Float16).  Each pair
is checked alone (one program: cppcheck's cross-unit rules see one .c),
with the configuration of GCC (-D__GNUC__), in few cppcheck runs, two at a
time.

- No mandatory or required rule may be reported (RULES below classifies
  every rule of MISRA C:2012 with Amendments 1 and 2): any finding of one
  fails the test.  The essential-type rules (10.1 to 10.8) hold because the
  AOT printer spells every value in its essential type (gen/cexpr.c).
- Rule 5.8 (an external name names nothing else): a pair whose kernels are
  named like the helpers' parameters and locals (a, x, mod, bits, ...)
  gets those renamed bcg_local_<name> (gen/aot.c), and a kernel named like
  a reduction's accumulator (acc) beside a reduction is refused.
- `bcgen aot --misra-report FILE` writes the deviation record; the set of
  advisory rules it lists must equal the set cppcheck reports for that
  pair, each with a reason and a count.  The one required rule it may
  list is 8.14 (restrict), exactly when the pair was generated with
  --restrict (cppcheck drops the keyword before its addon sees it, so the
  test checks the record against the prototypes instead).
- A hand-written file with known required-rule violations (3.1, 10.4, 15.6)
  must be reported, so that the check cannot pass by seeing nothing.

Without cppcheck the test reports a loud SKIP (make test installs it).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from _aot import DTYPES, Tap, bcgen, kernels_for

# MISRA C:2012 (third edition, 2019, with Amendments 1 and 2, as cppcheck
# 2.10 knows them): the category of every rule.  Directives are not checked
# by the addon.  Mandatory and required rules may not be violated here;
# advisory ones go into the deviation record.
MANDATORY = {"9.1", "12.5", "13.6", "17.3", "17.4", "17.6", "19.1", "21.13", "21.17",
             "21.18", "21.19", "21.20", "22.2", "22.4", "22.5", "22.6"}
ADVISORY = {"1.2", "2.3", "2.4", "2.5", "2.6", "2.7", "4.2", "5.9", "8.7", "8.9", "8.11",
            "8.13", "10.5", "11.4", "11.5", "12.1", "12.3", "12.4", "13.3", "13.4", "15.1",
            "15.4", "15.5", "17.5", "17.8", "18.4", "18.5", "19.2", "20.1", "20.5", "20.10",
            "21.12"}
REQUIRED = {"1.1", "1.3", "1.4", "2.1", "2.2", "3.1", "3.2", "4.1", "5.1", "5.2", "5.3",
            "5.4", "5.5", "5.6", "5.7", "5.8", "6.1", "6.2", "7.1", "7.2", "7.3", "7.4", "8.1",
            "8.2", "8.3", "8.4", "8.5", "8.6", "8.8", "8.10", "8.12", "8.14", "9.2", "9.3",
            "9.4", "9.5", "10.1", "10.2", "10.3", "10.4", "10.6", "10.7", "10.8", "11.1",
            "11.2", "11.3", "11.6", "11.7", "11.8", "11.9", "12.2", "13.1", "13.2", "13.5",
            "14.1", "14.2", "14.3", "14.4", "15.2", "15.3", "15.6", "15.7", "16.1", "16.2",
            "16.3", "16.4", "16.5", "16.6", "16.7", "17.1", "17.2", "17.7", "18.1", "18.2",
            "18.3", "18.6", "18.7", "18.8", "20.2", "20.3", "20.4", "20.6", "20.7", "20.8",
            "20.9", "20.11", "20.12", "20.13", "20.14", "21.1", "21.2", "21.3", "21.4", "21.5",
            "21.6", "21.7", "21.8", "21.9", "21.10", "21.11", "21.14", "21.15", "21.16",
            "21.21", "22.1", "22.3", "22.7", "22.8", "22.9", "22.10"}


def category(rule):
    for name, rules in (("mandatory", MANDATORY), ("required", REQUIRED),
                        ("advisory", ADVISORY)):
        if rule in rules:
            return name
    return "unknown"



CPPCHECK = ["cppcheck", "--addon=misra", "--enable=style", "--std=c99", "--inline-suppr",
            "-q", "-D__GNUC__", "--template={file}:{line}:{id}"]
MISRA_ID = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):misra-c2012-(?P<rule>\d+\.\d+)$")

tap = Tap()


def findings(paths, defines=()):
    """cppcheck's MISRA findings for each file of PATHS run as one program
    each: {path: [(file, line, rule)]}, and the lines it could not parse."""
    jobs = []
    for p in paths:
        # each in its own directory: cppcheck writes its addon's file list
        # (cppcheck-addon-ctu-file-list) beside the file, and two runs in
        # one directory would share it
        argv = CPPCHECK + list(defines) + ["-I", os.path.dirname(p), p]
        jobs.append((p, subprocess.Popen(argv, stdout=subprocess.PIPE, cwd=os.path.dirname(p),
                                         stderr=subprocess.STDOUT, text=True)))
        if len(jobs) >= 2:
            yield collect(*jobs.pop(0))
    for job in jobs:
        yield collect(*job)


def collect(path, process):
    out, _ = process.communicate(timeout=600)
    found, other = [], []
    for line in out.splitlines():
        m = MISRA_ID.match(line.strip())
        if m:
            found.append((os.path.basename(m["file"]), int(m["line"]), m["rule"]))
        elif re.search(r":misra-config$|[Ee]rror|Traceback|Bailing", line):
            other.append(line)  # the addon could not judge the file
    return path, found, other, process.returncode


def record_rules(path):
    """{rule: (count, reason)} from a deviation record written by bcgen."""
    rules = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"^\| (\d+\.\d+) \| (\w+) \| (\d+) \| (.+) \|$", line.rstrip("\n"))
            if m:
                rules[m[1]] = (m[2], int(m[3]), m[4].strip())
    return rules


def sweep(work):
    """(label, bcgen aot arguments, cppcheck -D options) of every pair."""
    pairs = []
    # every dtype fully unrolled and in grouped loops; plain loops (the same
    # statements once) for a dtype of each kind
    forms = [("full", ["--unroll", "full"], 1, 2, DTYPES),
             ("looped", ["--unroll", "none"], 2, 3, ["bool", "i8", "u64", "f32", "bf16"]),
             ("grouped-restrict", ["--unroll", "2", "--restrict"], 2, 3, DTYPES)]
    for label, options, rows, columns, dtypes in forms:
        args = ["aot"]
        for dtype in dtypes:
            for name, expr, ops in kernels_for(dtype, rows, columns):
                args += ["-k", f"{name}={expr}"] + sum((["-i", op] for op in ops), [])
        pairs.append((label, args + options, ()))
    # --math double: the f32 functions computed in double
    args = ["aot"]
    for name, expr, ops in kernels_for("f32", 2, 3):
        args += ["-k", f"{name}={expr}"] + sum((["-i", op] for op in ops), [])
    pairs.append(("math-double", args + ["--math", "double", "--unroll", "none"], ()))
    # output views, reductions, in place, scalars, per-kernel unroll
    forms = [
        ("accumulate", "acc + gain * x", ["acc=i32[3,5]", "gain=i32[]", "x=i32[5]"],
         ["--inplace", "acc"]),
        ("grad_b", "g * a", ["g=f32[3,5]", "a=f32[5]"], ["--reduce", "sum", "--to", "a"]),
        ("mean_rows", "x - 1", ["x=f64[2,5]"], ["--reduce", "mean", "--out-shape", "2,1"]),
        ("mean_i16", "x", ["x=i16[2,5]"], ["--reduce", "mean", "--out-shape", "2,1"]),
        ("sum_i8", "v * 3", ["v=i8[2,3,2]"],
         ["--reduce", "sum", "--out-shape", "3,1", "--out-dtype", "i32"]),
        ("sum_u64", "v", ["v=u64[2,3]"], ["--reduce", "sum", "--out-shape", "[]"]),
        ("prod_i32", "v", ["v=i32[2,3]"], ["--reduce", "prod", "--out-shape", "2,1"]),
        ("any_pos", "w > 0", ["w=i16[3,4]"], ["--reduce", "any", "--out-shape", "1,4"]),
        ("all_pos", "w > 0", ["w=i16[3,4]"], ["--reduce", "all", "--out-shape", "1,4"]),
        ("max_u16", "maximum(p, q)", ["p=u16[3,5]", "q=u16[5]"],
         ["--reduce", "max", "--out-shape", "[]"]),
        ("min_f16", "p", ["p=f16[3,5]"], ["--reduce", "min", "--out-shape", "[]"]),
        ("prod_bf16", "p", ["p=bf16[3,5]"], ["--reduce", "prod", "--out-shape", "3,1"]),
        ("sum_f32", "p * 2", ["p=f32[3,5]"], ["--reduce", "sum", "--out-shape", "[]"]),
        ("widen", "h + h", ["h=f32[3,5]"], ["--out-dtype", "f64"]),
        ("narrow", "h * 3", ["h=i32[3,5]"], ["--out-dtype", "i8"]),
        ("half_out", "h * 0.5", ["h=f32[3,5]"], ["--out-dtype", "f16"]),
        ("strided", "h * 2", ["h=f32[3,5]@[1,-3]"], ["--out-strides", "[10,2]"]),
        ("scale_u8", "u8(clip(f32(p) * 1.7, 0, 255))", ["p=u8[2,5]"],
         ["--unroll", "scale_u8=full"]),
        ("bump", "a + 1", ["a=u8[2,3]"], ["--inplace", "a", "--unroll", "bump=full"]),
        ("scalar", "s * 2", ["s=f64[]"], []),
        ("mixed", "f16(x * 3 + 0.5) + f16(d) + i", ["x=f32[2,3]", "d=f64[3]", "i=i8[2,1]"],
         []),
        ("libm", "tanh(x) * sqrt(abs(y)) + exp(-x * x) - log1p(abs(y)) + sin(x) * cos(y)"
         " + x ** y", ["x=f32[2,5]", "y=f32[5]"], []),
    ]
    args = ["aot"]
    for name, expr, ops, flags in forms:
        args += ["-k", f"{name}={expr}"] + sum((["-i", op] for op in ops), []) + flags
    pairs.append(("views-reductions-restrict", args + ["--restrict"], ()))
    # programs that fuse: one function writing every output (several
    # reductions, each its own accumulator), and the wrapper calling it
    pairs.append(("fused-programs", [
        "aot", "-k", "step=y = g * a; s = y; u = g + 1", "-i", "g=f32[3,5]", "-i", "a=f32[5]",
        "--reduce", "s=sum", "--to", "s=a", "--reduce", "u=max", "--to", "u=a",
        "--out-dtype", "y=f64",
        "-k", "grads=dw = dy * x; db = dy; n = dy > 0", "-i", "dy=i16[4,6]", "-i", "x=i16[4,6]",
        "--reduce", "dw=sum", "--out-shape", "dw=[4,1]", "--reduce", "db=mean",
        "--out-shape", "db=[4,1]", "--reduce", "n=all", "--out-shape", "n=[4,1]"], ()))
    # one bool used as a number, after another cast (10.5 in the record)
    pairs.append(("bool-number", ["aot", "-k", "q=a // b + (a > b)", "-i", "a=i16[8]", "-i",
                                  "b=i16[8]"], ()))
    # kernels named like the helpers' parameters, locals and union members
    # (rule 5.8): the helpers' names are renamed, the kernels keep theirs
    args = ["aot"]
    for name, expr, ops in [("a", "p // q + abs(p) + square(q)", ["p=i16[2,3]", "q=i16[3]"]),
                            ("x", "r ** 2 + sign(r) + r // 3.0 + r % 2.0", ["r=f32[4]"]),
                            ("mod", "expit(s) + logaddexp(s, s)", ["s=f64[3]"]),
                            ("bits", "f * 2 + g", ["f=f16[3]", "g=bf16[3]"]),
                            ("y", "add_sat(t, t) + mul_q15(t, t)", ["t=i16[4]"]),
                            # words of the helpers' preprocessor lines stay
                            ("h", "mul_q7(w, w)", ["w=i8[4]"]),
                            ("include", "sub_sat(w, w)", ["w=i8[4]"])]:
        args += ["-k", f"{name}={expr}"] + sum((["-i", op] for op in ops), [])
    pairs.append(("helper-names", args, ()))
    # the saturating helpers' Arm branches (ACLE intrinsics: qadd16, ssat,
    # qadd), as a Cortex-M4's compiler sees them
    args = ["aot"]
    for dtype in ("i8", "i16", "u16", "i32"):
        for name, expr, ops in kernels_for(dtype, 2, 3):
            if name.split("_")[0] in ("saturating", "pair", "fixed"):
                args += ["-k", f"{name}={expr}"] + sum((["-i", op] for op in ops), [])
    pairs.append(("saturating-arm", args + ["--unroll", "2"],
                  ("-D__ARM_FEATURE_SAT=1", "-D__ARM_FEATURE_DSP=1", "-D__ARM_FEATURE_SIMD32=1")))
    # the f16 helpers through the compiler's _Float16
    args = ["aot"]
    for name, expr, ops in kernels_for("f16", 2, 3)[:2]:
        args += ["-k", f"{name}={expr}"] + sum((["-i", op] for op in ops), [])
    pairs.append(("f16-native", args + ["--unroll", "none"], ("-D__FLT16_MAX__=65504",)))
    return pairs


def main():
    if shutil.which("cppcheck") is None:
        tap.skip("the MISRA C:2012 check", "cppcheck not installed (make test installs it)")
        return tap.finish()
    work = tempfile.mkdtemp(prefix="bcgen-aot-check-")
    try:
        run(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return tap.finish()


def spec_and_usage(work):
    """--misra-report with --spec (the command the header records names it)
    and its usage errors, which write nothing."""
    spec = os.path.join(work, "k.bcg")
    with open(spec, "w") as f:
        f.write("bcgen-spec 1\nrestrict\nkernel q = a // b + a\n    input a = i16[4]\n"
                "    input b = i16[4]\n")
    r = bcgen("aot", "--spec", spec, "-o", os.path.join(work, "k.c"), "--misra-report",
              os.path.join(work, "k.misra.md"))
    ok = r.returncode == 0 and os.path.exists(os.path.join(work, "k.misra.md"))
    header = open(os.path.join(work, "k.h")).read() if ok else ""
    tap.check("--spec with --misra-report writes the record; the header records "
              "'bcgen aot --spec k.bcg -o k.c --misra-report k.misra.md'",
              ok and "bcgen aot --spec k.bcg -o k.c --misra-report k.misra.md" in header,
              r.stderr)
    source = open(os.path.join(work, "k.c")).read() if ok else ""
    tap.check("no // in the pair's comments (rule 3.1): the expression reads a /\\/ b",
              ok and "//" not in source and "//" not in header and "a /\\/ b" in header, "")
    for bad in (os.path.join(work, "u.c"), os.path.join(work, "x//y.md")):
        r = bcgen("aot", "-k", "q=a + 1", "-i", "a=i8[2]", "-o", os.path.join(work, "u.c"),
                  "--misra-report", bad)
        tap.check(f"--misra-report {os.path.basename(bad)}: a usage error naming the flag, "
                  "nothing written",
                  r.returncode == 2 and "--misra-report" in r.stderr and
                  not os.path.exists(os.path.join(work, "u.c")), r.stderr)


def names(work):
    """Rule 5.8 where it can only be refused: a kernel named acc beside a
    reduction, whose body declares acc."""
    r = bcgen("aot", "-k", "acc=p + 1", "-i", "p=i8[3]", "-k", "total=q", "-i", "q=f32[2,3]",
              "--reduce", "sum", "--out-shape", "[]", "-o", os.path.join(work, "acc.c"))
    tap.check("a kernel named acc beside a reduction: refused, naming rule 5.8 and the kernel",
              r.returncode != 0 and "5.8" in r.stderr and "total" in r.stderr and
              not os.path.exists(os.path.join(work, "acc.c")), r.stderr)
    r = bcgen("aot", "-k", "acc=p + 1", "-i", "p=i8[3]", "-o", os.path.join(work, "acc.c"))
    tap.check("a kernel named acc without a reduction: accepted", r.returncode == 0, r.stderr)


def run(work):
    spec_and_usage(work)
    names(work)
    # the check sees violations: a hand-written file with 10.4 and 15.6
    control = os.path.join(work, "control.c")
    with open(control, "w") as f:
        f.write("#include <stdint.h>\n"
                "int32_t control(uint8_t a, int32_t b);\n"
                "/* a // b */\n"
                "int32_t control(uint8_t a, int32_t b)\n{\n"
                "    int32_t r = b;\n"
                "    if (a == b) {\n        r = 0;\n    }\n"
                "    while (r > 10)\n        r--;\n"
                "    return r;\n}\n")
    pairs = sweep(work)
    paths, records, defines, restricted = [], {}, {}, {}
    for label, args, cdefs in pairs:
        os.makedirs(os.path.join(work, label))
        path = os.path.join(work, label, label + ".c")
        report = os.path.join(work, label, label + ".misra.md")
        r = bcgen(*args, "-o", path, "--misra-report", report)
        if not tap.check(f"{label}: bcgen aot writes the pair and the MISRA record",
                         r.returncode == 0 and os.path.exists(report), r.stderr):
            continue
        paths.append(path)
        records[path] = record_rules(report)
        defines[path] = cdefs
        restricted[path] = "--restrict" in args
        if label == "helper-names":
            text = open(path).read()
            renamed = {w for w in re.findall(r"\bbcg_local_(\w+)", text)}
            tap.check("helper-names: the helpers' a, x, mod, bits and y are renamed "
                      "bcg_local_<name>, the kernels keep their names, preprocessor lines "
                      "(#include <arm_acle.h>) are left as they are",
                      {"a", "x", "mod", "bits", "y"} <= renamed and
                      "\n#include <arm_acle.h>\n" in text and "bcg_local_include" not in text and
                      all(re.search(rf"^void {k}\(", text, re.M) for k in ("a", "x", "mod")),
                      f"renamed: {sorted(renamed)}")
            cc = subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic",
                                 "-Wshadow", "-c", path, "-o", os.devnull],
                                capture_output=True, text=True)
            tap.check("helper-names: the renamed pair compiles warning-free (gcc -Wshadow)",
                      cc.returncode == 0, cc.stderr)
    results = list(findings([control]))
    _, found, _, _ = results[0]
    seen = {rule for _, _, rule in found}
    tap.check("negative control: cppcheck reports 3.1, 10.4 and 15.6 in a hand-written file",
              {"3.1", "10.4", "15.6"} <= seen, "reported: %s" % sorted(seen))
    for define_set in sorted({defines[p] for p in paths}):
        group = [p for p in paths if defines[p] == define_set]
        for path, found, other, status in findings(group, define_set):
            judge(os.path.basename(path)[:-2], found, other, status, records[path],
                  restricted[path], open(path).read())


def judge(label, found, other, status, record, restricted, source):
    tap.check(f"{label}: cppcheck ran (no addon or configuration errors)",
              status == 0 and not other, "\n".join(other))
    by_rule = {}
    for file, line, rule in found:
        by_rule.setdefault(rule, []).append(f"{file}:{line}")
    bad = {r: places for r, places in by_rule.items()
           if category(r) in ("mandatory", "required", "unknown")}
    tap.check(f"{label}: no mandatory or required rule is violated ({len(found)} findings, "
              f"rules {', '.join(sorted(by_rule, key=rule_key)) or 'none'})",
              not bad, "\n".join(f"{r} ({category(r)}): {len(p)} places, e.g. {p[:3]}"
                                 for r, p in sorted(bad.items())))
    advisory = {r for r in by_rule if category(r) == "advisory"}
    listed = {r for r, (cat, _, _) in record.items() if cat == "Advisory"}
    required = {r: row for r, row in record.items() if cat_of(row) != "Advisory"}
    tap.check(f"{label}: the record lists required rule 8.14 (restrict) "
              f"{'as its one deviation' if restricted else 'not at all'}, as the pair "
              f"{'uses' if restricted else 'does not use'} BCGEN_RESTRICT",
              set(required) == ({"8.14"} if restricted else set()) and
              ("BCGEN_RESTRICT" in source) == restricted and
              all(cat == "Required" and count > 0 and "--restrict" in reason
                  for cat, count, reason in required.values()), str(required))
    tap.check(f"{label}: the record lists exactly the advisory rules cppcheck reports "
              f"({', '.join(sorted(advisory, key=rule_key)) or 'none'})",
              listed == advisory,
              f"in the record only: {sorted(listed - advisory)}; "
              f"reported but not in the record: {sorted(advisory - listed)}")
    tap.check(f"{label}: every advisory rule of the record is advisory and has a reason and "
              "a count",
              all(category(r) == "advisory" and count > 0 and reason
                  for r, (cat, count, reason) in record.items() if cat == "Advisory"),
              str(record))


def cat_of(row):
    return row[0]


def rule_key(rule):
    a, b = rule.split(".")
    return (int(a), int(b))


if __name__ == "__main__":
    main()
