#!/usr/bin/env python3
"""Emitted AOT kernels compile without a warning where they are used: every
dtype x (fully unrolled, plain loops, grouped loops) x math float/double,
cross-compiled for Cortex-M4 (soft and hard float) and RISC-V (rv32, rv64)
with -ffreestanding -std=c99 -Wall -Wextra -Werror -pedantic -O2, and on the
host with gcc and clang (plus -Wmissing-prototypes).  Compiles run in
parallel; the whole matrix takes well under a minute on two cores."""
import concurrent.futures
import os
import shutil
import subprocess
import tempfile

from _aot import (CROSS, DTYPES, HOST, UNROLL_MODES, Tap, aot_args, bcgen, compile_c,
                  kernels_for, missing_tools)

tap = Tap()
work = tempfile.mkdtemp(prefix="bcgen-aot-cross-")

# ---- generate one pair per dtype x mode (and the f32 ones with --math double)
pairs = []
for dtype in DTYPES:
    for mode, (options, rows, columns) in UNROLL_MODES.items():
        maths = ["float", "double"] if dtype == "f32" else ["float"]
        for math in maths:
            stem = f"{dtype}_{mode}_{math}"
            extra = options + ["--math", math] + (["--restrict"] if mode == "looped" else [])
            r = bcgen(*aot_args(kernels_for(dtype, rows, columns), work, stem, extra))
            if tap.check(f"bcgen aot writes {stem}.c/.h", r.returncode == 0, r.stderr):
                pairs.append(stem)

# the unroll modes really differ (the same kernel, three shapes of code)
with open(os.path.join(work, "f32_full_float.c")) as f:
    full = f.read()
with open(os.path.join(work, "f32_looped_float.c")) as f:
    looped = f.read()
with open(os.path.join(work, "f32_grouped_float.c")) as f:
    grouped = f.read()
tap.check("--unroll full gives straight-line code", "for (" not in full and "out[11] =" in full)
tap.check("--unroll none gives plain loops", "for (ptrdiff_t i1 = 0; i1 < 9; i1++)" in looped,
          looped[-1500:])
tap.check("--unroll 4 groups the innermost loop by 4", "i1 < 2; i1++" in grouped, grouped[-1500:])
with open(os.path.join(work, "f32_full_double.c")) as f:
    double = f.read()
tap.check("--math double computes f32 sqrt in double and rounds once",
          "(float)sqrt((double)" in double and "sqrtf(" not in double, double[-800:])
tap.check("--math float uses sqrtf", "sqrtf(" in full)

# ---- compile everything everywhere, in parallel
targets = dict(CROSS)
targets.update(HOST)
absent = missing_tools(targets.values())
for tool in absent:
    tap.skip(f"compiling with {tool}", f"{tool} is not installed (make aot-deps, run by make test as root, installs it)")
jobs = []
for name, prefix in targets.items():
    if prefix[0] in absent:
        continue
    for stem in pairs:
        jobs.append((name, stem, prefix))

with concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
    results = list(pool.map(lambda job: compile_c(job[2], os.path.join(work, job[1] + ".c"), work),
                            jobs))
for (name, stem, _), (ok, output) in zip(jobs, results):
    tap.check(f"{stem}.c compiles warning-free for {name}", ok, output)

# ---- --math float keeps f32 kernels in single precision on a Cortex-M4F ----------------------
# (every libm call is the f form, powf included, and no __aeabi_d* software-double helper is
# called); --math double is the contrast that shows the check can see doubles
M4F = CROSS["cortex-m4f"]
if "arm-none-eabi-gcc" in absent or not shutil.which("arm-none-eabi-nm"):
    tap.skip("--math float has no double arithmetic on cortex-m4f", "arm-none-eabi-gcc is not installed")
else:
    single = ("sqrt(a) + exp(b) - log(a) * sin(b) / cos(a) + tanh(b) + a ** b + a ** 2"
              " + floor(a) - ceil(b) + a // b + a % b + abs(a) + minimum(a, b)")
    undefined = {}
    for math in ["float", "double"]:
        stem = f"single_{math}"
        r = bcgen("aot", "-k", f"single={single}", "-i", "a=f32[6,5]", "-i", "b=f32[5]",
                  "--math", math, "-o", os.path.join(work, stem + ".c"))
        obj = os.path.join(work, stem + ".o")
        ok, output = compile_c(M4F, os.path.join(work, stem + ".c"), work, output=obj)
        nm = subprocess.run(["arm-none-eabi-nm", "-u", obj], capture_output=True, text=True)
        undefined[math] = sorted(line.split()[-1] for line in nm.stdout.splitlines() if line.strip())
        tap.check(f"the f32 kernel with --math {math} builds for cortex-m4f",
                  r.returncode == 0 and ok, r.stderr + output)
    calls = undefined["float"]
    tap.check("--math float: an f32 kernel on cortex-m4f calls only f-suffixed libm functions "
              "(powf, sqrtf, ...) and no __aeabi_d* double helper",
              calls and all(c.endswith("f") and not c.startswith("__aeabi_d") for c in calls)
              and "powf" in calls, calls)
    tap.check("--math double: the same kernel does compute in double (pow, __aeabi_d*)",
              "pow" in undefined["double"]
              and any(c.startswith("__aeabi_") for c in undefined["double"]), undefined["double"])

tap.finish()
