#!/usr/bin/env python3
"""bench/aot_unroll.py - code size and executed instructions of `bcgen aot`
kernels on a Cortex-M4F, fully unrolled against loops, for outputs of
4 to 64 elements: the measurement behind the AOT default unroll limit
(issue 14, item 5; README "Firmware", --unroll).

Each kernel is compiled with arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb
-mfloat-abi=hard -mfpu=fpv4-sp-d16 -std=c99 at -Os and -O2; its bytes are
nm's.  Instructions: the same object (its ARM attributes removed, so that
it links with an A-profile program; the instructions are Thumb-2 and VFP,
which qemu-arm runs as they are) is linked into a static
arm-linux-gnueabihf harness that calls every kernel once, run under
qemu-arm -singlestep -d exec, counting the traced PCs inside each kernel.

    BUILD=build python3 bench/aot_unroll.py [--sizes 4,8,16,32,64]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

BCGEN = os.path.abspath(os.path.join(os.environ.get("BUILD", "build"), "bcgen"))
CPU = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-std=c99",
       "-ffreestanding"]
# name -> (expression, operands with N for the size); a scalar operand is rank 0
FAMILIES = {
    "fma_f32": ("x * g + b", ["x=f32[N]", "g=f32[N]", "b=f32[]"]),
    "q15_cast": ("i16(x * 32768.0)", ["x=f32[N]"]),
    "add_u8": ("a + b", ["a=u8[N]", "b=u8[N]"]),
    "relu_i32": ("where(a > 0, a, 0)", ["a=i32[N]"]),
}
MODES = {"full": "full", "loop4": "4", "none": "none"}
CTYPE = {"f32": "float", "i16": "int16_t", "u8": "uint8_t", "i32": "int32_t"}


def run(argv, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(" ".join(argv) + "\n" + r.stderr)
    return r


def kernels(sizes):
    for family, (expr, ops) in FAMILIES.items():
        for n in sizes:
            yield f"{family}_{n}", expr, [o.replace("N", str(n)) for o in ops]


def harness(ks):
    lines = ["#include <stdint.h>", '#include "k.h"']
    calls = []
    for name, _, ops in ks:
        args = [f"o_{name}"]
        up = name.upper()
        lines.append(f"static {up}_OUT_TYPE o_{name}[{up}_OUT_ELEMENTS];")
        for op in ops:
            opname, rest = op.split("=")
            dtype = rest.split("[")[0]
            if rest.endswith("[]"):
                args.append("(%s)1" % CTYPE[dtype])
            else:
                lines.append(f"static {CTYPE[dtype]} {opname}_{name}[{up}_{opname.upper()}_ELEMENTS];")
                args.append(f"{opname}_{name}")
        calls.append(f"    {name}({', '.join(args)});")
    return "\n".join(lines + ["int main(void)", "{"] + calls + ["    return 0;", "}", ""])


def measure(work, sizes, mode, level):
    ks = list(kernels(sizes))
    argv = [BCGEN, "aot"]
    for name, expr, ops in ks:
        argv += ["-k", f"{name}={expr}"] + sum((["-i", o] for o in ops), [])
    run(argv + ["--unroll", MODES[mode], "-o", os.path.join(work, "k.c")])
    obj = os.path.join(work, "k.o")
    run(["arm-none-eabi-gcc"] + CPU + [level, "-c", os.path.join(work, "k.c"), "-o", obj])
    sizes_by_name = {}
    for line in run(["arm-none-eabi-nm", "-S", obj]).stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] == "T":
            sizes_by_name[parts[3]] = int(parts[1], 16)
    # instructions under qemu
    run(["arm-linux-gnueabihf-objcopy", "--remove-section", ".ARM.attributes", obj,
         os.path.join(work, "k2.o")])
    with open(os.path.join(work, "h.c"), "w") as f:
        f.write(harness(ks))
    exe = os.path.join(work, "h")
    run(["arm-linux-gnueabihf-gcc", "-static", "-O1", "-I", work, os.path.join(work, "h.c"),
         os.path.join(work, "k2.o"), "-o", exe, "-lm"])
    ranges = {}
    for line in run(["arm-linux-gnueabihf-nm", "-S", exe]).stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] in sizes_by_name:
            start = int(parts[0], 16)
            ranges[parts[3]] = (start, start + int(parts[1], 16))
    trace = os.path.join(work, "trace.log")
    subprocess.run(["qemu-arm", "-singlestep", "-d", "exec,nochain", "-D", trace, exe],
                   capture_output=True)
    counts = dict.fromkeys(ranges, 0)
    pattern = re.compile(r"^Trace \d+: \S+ \[[0-9a-f]+/([0-9a-f]+)/")
    spans = sorted((lo, hi, n) for n, (lo, hi) in ranges.items())
    with open(trace) as f:
        for line in f:
            m = pattern.match(line)
            if not m:
                continue
            pc = int(m.group(1), 16)
            for lo, hi, n in spans:
                if lo <= pc < hi:
                    counts[n] += 1
                    break
    return sizes_by_name, counts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="4,8,16,32,64")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    work = tempfile.mkdtemp(prefix="bcgen-aot-unroll-")
    results = {}
    try:
        for mode in MODES:
            for level in ("-Os", "-O2"):
                results[mode, level] = measure(work, sizes, mode, level)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("bytes / instructions executed per call, Cortex-M4F "
          "(arm-none-eabi-gcc %s; qemu-arm)" % " ".join(CPU))
    header = "%-14s %5s" % ("kernel", "n") + "".join(
        "  %14s" % f"{mode} {level}" for level in ("-Os", "-O2") for mode in MODES)
    print(header)
    for family in FAMILIES:
        for n in sizes:
            name = f"{family}_{n}"
            cells = []
            for level in ("-Os", "-O2"):
                for mode in MODES:
                    size, count = results[mode, level]
                    cells.append("  %14s" % f"{size.get(name, 0)}/{count.get(name, 0)}")
            print("%-14s %5d" % (family, n) + "".join(cells))


if __name__ == "__main__":
    main()
