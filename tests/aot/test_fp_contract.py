#!/usr/bin/env python3
"""AOT pairs give the reference results bit for bit under the flags firmware
builds really use (issue 14, item 1): GCC's default GNU dialect
(-std=gnu11) at -O3 on hardware with fused multiply-add contracts
x * g + b into one rounding unless the file turns contraction off itself.

Kernels of f32 and f64 multiply-adds (the forms that contract) are built
into a harness with the pair and run:
  - on the host with gcc and clang, -std=gnu11 -O3 -march=native (the
    machine has FMA: AVX2), and with gcc -ffp-contract=fast on the command
    line (the pragma must still win);
  - for 32-bit ARM with VFPv4 (vfma), -std=gnu11 -O3, under qemu-arm.
The expected values are NumPy's unfused float32/float64 arithmetic (each
product and sum rounded), which is what the reference evaluator computes.
A negative control builds the same pair with its pragma removed and must
see differences, so the test would catch a pragma that stopped working.
-ffast-math must be refused at compile time.
"""
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

from _aot import Tap, bcgen, missing_tools

tap = Tap()
N = 256
rng = np.random.default_rng(20261123)

KERNELS = [  # name, expression, dtype
    ("fma32", "x * g + b", "f32"),
    ("fms32", "x * g - b * y", "f32"),
    ("fma64", "x * g + b", "f64"),
    ("poly32", "(x * g + b) * x + y", "f32"),
]
NP = {"f32": np.float32, "f64": np.float64}
BITS = {"f32": ("uint32_t", np.uint32, "float"), "f64": ("uint64_t", np.uint64, "double")}


def inputs(dtype):
    t = NP[dtype]
    return {n: (rng.standard_normal(N) * 3).astype(t) for n in ("x", "g", "b", "y")}


def expected(expr, env, dtype):
    t = NP[dtype]
    x, g, b, y = (env[n] for n in ("x", "g", "b", "y"))
    with np.errstate(all="ignore"):
        if expr == "x * g + b":
            return (x * g).astype(t) + b
        if expr == "x * g - b * y":
            return (x * g).astype(t) - (b * y).astype(t)
        if expr == "(x * g + b) * x + y":
            return ((x * g).astype(t) + b) * x + y
    raise ValueError(expr)


def c_array(name, values, dtype):
    ctype, utype, _ = BITS[dtype]
    bits = values.view(utype)
    body = ", ".join("0x%xU%s" % (int(v), "LL" if dtype == "f64" else "") for v in bits)
    return "static const %s %s_bits[%d] = {%s};\n" % (ctype, name, N, body)


def harness(data):
    """main(): copies the inputs in by their bits, runs every kernel, prints
    each output element's bits in hex, one kernel a line."""
    out = ['#include <stdio.h>\n#include <stdint.h>\n#include <string.h>\n#include "k.h"\n']
    for name, _, dtype in KERNELS:
        for op, values in data[name].items():
            out.append(c_array("%s_%s" % (name, op), values, dtype))
    out.append("int main(void)\n{\n")
    for name, _, dtype in KERNELS:
        ctype, _, ftype = BITS[dtype]
        out.append("    {\n")
        for op in ("x", "g", "b", "y"):
            out.append("        static %s %s[%d];\n" % (ftype, op, N))
            out.append("        memcpy(%s, %s_%s_bits, sizeof %s);\n" % (op, name, op, op))
        out.append("        static %s out[%d];\n" % (ftype, N))
        out.append("        %s;\n" % call(name))
        out.append('        printf("%s");\n' % name)
        out.append("        for (int i = 0; i < %d; i++) {\n" % N)
        out.append("            %s bits;\n            memcpy(&bits, &out[i], sizeof bits);\n" % ctype)
        out.append('            printf(" %llx", (unsigned long long)bits);\n        }\n')
        out.append('        printf("\\n");\n    }\n')
    out.append("    return 0;\n}\n")
    return "".join(out)


CALLS = {}


def call(name):
    return CALLS[name]


def build_and_run(cc_cmd, workdir, source_name, exe, runner=None):
    r = subprocess.run(cc_cmd + ["-I", workdir, os.path.join(workdir, "main.c"),
                                 os.path.join(workdir, source_name), "-o", exe, "-lm"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr
    r = subprocess.run((runner or []) + [exe], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return None, r.stderr
    return r.stdout, ""


def mismatches(output, want_lines):
    got = {}
    for line in output.strip().splitlines():
        parts = line.split()
        got[parts[0]] = parts[1:]
    bad = 0
    for name, want in want_lines.items():
        bad += sum(1 for a, b in zip(got.get(name, []), want) if a != b)
        bad += abs(len(got.get(name, [])) - len(want))
    return bad


def main():
    work = tempfile.mkdtemp(prefix="bcgen-fpcontract-")
    try:
        args = ["aot"]
        data, want = {}, {}
        for name, expr, dtype in KERNELS:
            env = inputs(dtype)
            data[name] = env
            value = expected(expr, env, dtype)
            want[name] = ["%x" % int(v) for v in value.view(BITS[dtype][1])]
            args += ["-k", "%s=%s" % (name, expr)]
            for op in ("x", "g", "b", "y"):
                if re.search(r"\b%s\b" % op, expr):
                    args += ["-i", "%s=%s[%d]" % (op, dtype, N)]
            ops = [op for op in ("x", "g", "b", "y") if re.search(r"\b%s\b" % op, expr)]
            CALLS[name] = "%s(out, %s)" % (name, ", ".join(ops))
        src = os.path.join(work, "k.c")
        r = bcgen(*args, "--unroll", "none", "-o", src)
        tap.check("bcgen aot writes the multiply-add pair", r.returncode == 0, r.stderr)
        if r.returncode != 0:
            return tap.finish()
        with open(os.path.join(work, "main.c"), "w") as f:
            f.write(harness(data))
        text = open(src).read()
        tap.check("the pair turns contraction off for GCC and clang",
                  '#pragma GCC optimize ("fp-contract=off")' in text and
                  "#pragma STDC FP_CONTRACT OFF" in text, "")
        with open(os.path.join(work, "k_nopragma.c"), "w") as f:
            f.write(re.sub(r"#pragma[^\n]*\n", "", text))

        host_fma = "fma" in open("/proc/cpuinfo").read().split()
        flags = ["-std=gnu11", "-O3", "-march=native", "-Wall", "-Wextra", "-Werror"]
        builds = [("gcc", ["gcc"] + flags), ("clang", ["clang"] + flags),
                  ("gcc -ffp-contract=fast", ["gcc", "-ffp-contract=fast"] + flags)]
        for label, cmd in builds:
            if missing_tools([cmd[:1]]):
                tap.skip(label, cmd[0] + " not installed")
                continue
            out, err = build_and_run(cmd, work, "k.c", os.path.join(work, "host"))
            tap.check("%s -std=gnu11 -O3 -march=native: results bit-identical to the "
                      "unfused reference" % label, out is not None and mismatches(out, want) == 0,
                      err or "%d elements differ" % (mismatches(out, want) if out else -1))
        if host_fma:
            out, err = build_and_run(["gcc"] + flags, work, "k_nopragma.c",
                                     os.path.join(work, "host_control"))
            tap.check("negative control: without the pragma gcc -std=gnu11 fuses and the "
                      "results differ (so the test can see contraction)",
                      out is not None and mismatches(out, want) > 0, err)
        else:
            tap.skip("negative control", "this CPU has no FMA")

        r = subprocess.run(["gcc", "-ffast-math", "-std=gnu11", "-O2", "-c", "-I", work, src,
                            "-o", os.path.join(work, "fast.o")], capture_output=True, text=True)
        tap.check("-ffast-math is refused at compile time with a message",
                  r.returncode != 0 and "ffast-math" in r.stderr, r.stderr)

        arm = ["arm-linux-gnueabihf-gcc", "-static", "-std=gnu11", "-O3", "-mfpu=neon-vfpv4",
               "-mfloat-abi=hard", "-Wall", "-Wextra", "-Werror"]
        absent = missing_tools([arm[:1], ["qemu-arm"]])
        if absent:
            tap.skip("ARM VFPv4 under qemu", ", ".join(absent) + " not installed")
        else:
            out, err = build_and_run(arm, work, "k.c", os.path.join(work, "arm"), ["qemu-arm"])
            tap.check("arm-linux-gnueabihf-gcc -std=gnu11 -O3 -mfpu=neon-vfpv4 under qemu-arm: "
                      "results bit-identical", out is not None and mismatches(out, want) == 0,
                      err or "%d elements differ" % (mismatches(out, want) if out else -1))
            out, err = build_and_run(arm, work, "k_nopragma.c", os.path.join(work, "arm_control"),
                                     ["qemu-arm"])
            tap.check("ARM negative control: without the pragma vfma changes results",
                      out is not None and mismatches(out, want) > 0, err)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return tap.finish()


if __name__ == "__main__":
    main()
