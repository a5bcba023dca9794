#!/usr/bin/env python3
"""bench/sat_cmsis.py - saturating Q15 arithmetic of `bcgen aot` kernels
(add_sat, sub_sat, mul_q15 over i16) on a Cortex-M4 against hand-written
C loops and, when given its source, CMSIS-DSP's arm_add_q15, arm_sub_q15
and arm_mult_q15 (issue 14, item 6; docs/semantics.md "Saturating
arithmetic").  Not part of make test.

Every function is compiled with arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb
-mfloat-abi=hard -mfpu=fpv4-sp-d16 at -O2 (and -Os); its bytes are nm's.
Instructions: as bench/aot_unroll.py, the same objects (ARM attributes
removed) are linked into a static arm-linux-gnueabihf harness that calls
each function once on the same data and checks that every implementation
gives the same output; qemu-arm -singlestep -d exec counts the traced PCs
inside each function.

The hand loops are what one writes without intrinsics: compute in int,
clamp with comparisons.  CMSIS-DSP is not part of bcgen: pass checkouts of
github.com/ARM-software/CMSIS-DSP and of CMSIS-Core (CMSIS_6's
CMSIS/Core/Include, for cmsis_compiler.h); its sources are compiled in a
temporary directory for this measurement only.

    BUILD=build python3 bench/sat_cmsis.py [--sizes 64,1024] \\
        [--cmsis-dsp DIR --cmsis-core DIR/CMSIS/Core/Include] [--unroll 4]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

BCGEN = os.path.abspath(os.path.join(os.environ.get("BUILD", "build"), "bcgen"))
# not -ffreestanding (bench/aot_unroll.py's): CMSIS-DSP reads pairs of q15
# through memcpy, which must stay a builtin to become one load
CPU = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-std=c99"]
FUNCTIONS = {"add": ("add_sat", "arm_add_q15"), "sub": ("sub_sat", "arm_sub_q15"),
             "mul": ("mul_q15", "arm_mult_q15")}
HAND = """#include <stdint.h>
void hand_add(const int16_t *a, const int16_t *b, int16_t *out, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        int32_t s = (int32_t)a[i] + b[i];
        out[i] = (int16_t)(s > 32767 ? 32767 : s < -32768 ? -32768 : s);
    }
}
void hand_sub(const int16_t *a, const int16_t *b, int16_t *out, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        int32_t s = (int32_t)a[i] - b[i];
        out[i] = (int16_t)(s > 32767 ? 32767 : s < -32768 ? -32768 : s);
    }
}
void hand_mul(const int16_t *a, const int16_t *b, int16_t *out, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        int32_t p = ((int32_t)a[i] * b[i]) >> 15;
        out[i] = (int16_t)(p > 32767 ? 32767 : p);
    }
}
"""


def run(argv, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(" ".join(argv) + "\n" + r.stdout + r.stderr)
    return r


def harness(sizes, with_cmsis):
    """Calls every implementation once per size on the same data and
    compares their outputs (exit 1 on a difference)."""
    lines = ["#include <stdint.h>", "#include <stdio.h>", "#include <string.h>", '#include "k.h"']
    for op in FUNCTIONS:
        lines.append(f"void hand_{op}(const int16_t *, const int16_t *, int16_t *, unsigned);")
        if with_cmsis:
            lines.append(f"void {FUNCTIONS[op][1]}(const int16_t *, const int16_t *, int16_t *,"
                         " uint32_t);")
    top = max(sizes)
    lines += [f"static int16_t a[{top}], b[{top}], o1[{top}], o2[{top}], o3[{top}];",
              "int main(void)", "{", "    uint32_t x = 12345;", "    int bad = 0;",
              f"    for (int i = 0; i < {top}; i++) {{",
              "        x = x * 1103515245u + 12345u; a[i] = (int16_t)(x >> 16);",
              "        x = x * 1103515245u + 12345u; b[i] = (int16_t)(x >> 16);",
              "        if (i % 7 == 0) { a[i] = -32768; b[i] = (int16_t)(i % 2 ? -32768 : 32767); }",
              "    }"]
    for n in sizes:
        for op in FUNCTIONS:
            lines.append(f"    sat_{op}_{n}(o1, a, b);")
            lines.append(f"    hand_{op}(a, b, o2, {n});")
            check = f"memcmp(o1, o2, {n} * 2)"
            if with_cmsis:
                lines.append(f"    {FUNCTIONS[op][1]}(a, b, o3, {n});")
                check += f" || memcmp(o1, o3, {n} * 2)"
            lines.append(f'    if ({check}) {{ printf("{op} {n} differs\\n"); bad = 1; }}')
    lines += ["    return bad;", "}", ""]
    return "\n".join(lines)


def measure(work, sizes, level, unroll, cmsis):
    argv = [BCGEN, "aot"]
    for n in sizes:
        for op, (function, _) in FUNCTIONS.items():
            argv += ["-k", f"sat_{op}_{n}={function}(a, b)", "-i", f"a=i16[{n}]",
                     "-i", f"b=i16[{n}]"]
    run(argv + ["--unroll", unroll, "-o", os.path.join(work, "k.c")])
    with open(os.path.join(work, "hand.c"), "w") as f:
        f.write(HAND)
    objects = [os.path.join(work, "k.c"), os.path.join(work, "hand.c")]
    include = []
    if cmsis:
        dsp, core = cmsis
        # ARM_MATH_LOOPUNROLL: CMSIS-DSP's default build (its CMake option
        # LOOPUNROLL is ON); ARM_MATH_DSP follows from __ARM_FEATURE_DSP
        include = ["-I", os.path.join(dsp, "Include"), "-I", os.path.join(dsp, "PrivateInclude"),
                   "-I", core, "-DARM_MATH_LOOPUNROLL"]
        objects += [os.path.join(dsp, "Source", "BasicMathFunctions", f"{name}.c")
                    for _, name in FUNCTIONS.values()]
    sizes_by_name, linked = {}, []
    for source in objects:
        obj = os.path.join(work, os.path.basename(source) + ".o")
        run(["arm-none-eabi-gcc"] + CPU + include + [level, "-c", source, "-o", obj])
        for line in run(["arm-none-eabi-nm", "-S", obj]).stdout.splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[2] == "T":
                sizes_by_name[parts[3]] = int(parts[1], 16)
        stripped = obj + ".linux.o"
        run(["arm-linux-gnueabihf-objcopy", "--remove-section", ".ARM.attributes", obj, stripped])
        linked.append(stripped)
    with open(os.path.join(work, "h.c"), "w") as f:
        f.write(harness(sizes, bool(cmsis)))
    exe = os.path.join(work, "h")
    run(["arm-linux-gnueabihf-gcc", "-static", "-O1", "-I", work, os.path.join(work, "h.c")]
        + linked + ["-o", exe])
    undefined = run(["arm-linux-gnueabihf-nm", "-u"] + linked).stdout.split()
    if any(u in ("memcpy", "memmove") for u in undefined):
        sys.exit("a measured function calls memcpy, whose instructions would not be counted")
    ranges = {}
    for line in run(["arm-linux-gnueabihf-nm", "-S", exe]).stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] in sizes_by_name:
            start = int(parts[0], 16) & ~1
            ranges[parts[3]] = (start, start + int(parts[1], 16))
    trace = os.path.join(work, "trace.log")
    r = subprocess.run(["qemu-arm", "-singlestep", "-d", "exec,nochain", "-D", trace, exe],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("the implementations differ:\n" + r.stdout)
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
    parser.add_argument("--sizes", default="64,1024")
    parser.add_argument("--unroll", default="4", help="bcgen aot --unroll (default 4)")
    parser.add_argument("--cmsis-dsp", help="a CMSIS-DSP checkout")
    parser.add_argument("--cmsis-core", help="CMSIS-Core's Include directory (cmsis_compiler.h)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    cmsis = (args.cmsis_dsp, args.cmsis_core) if args.cmsis_dsp and args.cmsis_core else None
    work = tempfile.mkdtemp(prefix="bcgen-sat-cmsis-")
    results = {}
    try:
        for level in ("-O2", "-Os"):
            for n in sizes:   # one program per size: each function runs once
                results[level, n] = measure(work, [n], level, args.unroll, cmsis)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("instructions executed per call / bytes, Cortex-M4 (arm-none-eabi-gcc %s; qemu-arm);"
          " bcgen aot --unroll %s" % (" ".join(CPU), args.unroll))
    print("%-8s %5s  %-6s %22s %22s %22s %10s" % ("function", "n", "level", "bcgen", "hand loop",
                                                   "CMSIS-DSP", "bcgen/CMSIS"))
    for level in ("-O2", "-Os"):
        for op, (function, cmsis_name) in FUNCTIONS.items():
            for n in sizes:
                size, count = results[level, n]
                name = f"sat_{op}_{n}"
                cells = ["%d / %d B" % (count.get(k, 0), size.get(k, 0))
                         for k in (name, f"hand_{op}", cmsis_name)]
                if not cmsis:
                    cells[2] = "-"
                ratio = "%.2f" % (count[name] / count[cmsis_name]) if cmsis else "-"
                print("%-8s %5d  %-6s %22s %22s %22s %10s" % (function, n, level, cells[0],
                                                              cells[1], cells[2], ratio))
    print("(bcgen's kernels are specialised to n; the hand loops and CMSIS-DSP take n as an "
          "argument)")


if __name__ == "__main__":
    main()
