#!/usr/bin/env python3
"""f32 AOT kernels use no double arithmetic under --math float, the default
(issue 14, item 2): a Cortex-M4F has a single-precision FPU only, so any
double makes gcc call the software routines __aeabi_f2d, __aeabi_dadd,
__aeabi_d2iz, ...  A sweep of f32 kernels (every operator and function on
f32 operands and f32 literals, casts to every integer type, the helpers for
//, %, **, clip, minimum, maximum, where) is compiled for cortex-m4 with
the hard single-precision FPU at -O0, -Os and -O2, and the object must not
reference any __aeabi_d* or __aeabi_f2d symbol.  A negative control with
one f64 kernel must reference them (so the check can see them).
"""
import os
import shutil
import subprocess
import tempfile

from _aot import Tap, bcgen, missing_tools

tap = Tap()
CC = ["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-mfpu=fpv4-sp-d16",
      "-mfloat-abi=hard", "-std=c99", "-ffreestanding", "-Wall", "-Wextra", "-Werror", "-c"]
NM = ["arm-none-eabi-nm", "-u"]

EXPRESSIONS = [
    "x * g + b", "x / g - b", "-x", "abs(x)", "sqrt(x)", "exp(x)", "log(x)", "sin(x)",
    "cos(x)", "tanh(x)", "floor(x)", "ceil(x)", "log1p(x)", "x // g", "x % g", "x ** g",
    "minimum(x, g)", "maximum(x, g)", "clip(x, g, b)", "where(x > g, x, b)",
    "x * 0.5 + 1.25", "x < 2.5", "(x == g) | (x != b)", "where(x >= 0, x, 0.1 * x)",
    "i8(x)", "i16(x)", "i32(x)", "i64(x)", "u8(x)", "u16(x)", "u32(x)", "u64(x)", "bool(x)",
    "i16(x * 32768.0)", "u8(clip(x * 255, 0, 255))", "f32(i32(x)) + x",
    "expit(x)", "logaddexp(x, g)", "logaddexp2(x, g)", "deg2rad(x) + rad2deg(g)",
    "sign(x) + square(g) + reciprocal(b) + round(x)",
]


def main():
    absent = missing_tools([CC, NM])
    if absent:
        tap.skip("the Cortex-M4F no-double check", ", ".join(absent) + " not installed "
                 "(make aot-deps installs gcc-arm-none-eabi)")
        return tap.finish()
    work = tempfile.mkdtemp(prefix="bcgen-nodouble-")
    try:
        args = ["aot"]
        for i, expr in enumerate(EXPRESSIONS):
            args += ["-k", "k%d=%s" % (i, expr), "-i", "x=f32[16]", "-i", "g=f32[16]",
                     "-i", "b=f32[16]"]
        src = os.path.join(work, "f32.c")
        r = bcgen(*args, "--unroll", "none", "-o", src)
        if not tap.check("bcgen aot writes %d f32 kernels" % len(EXPRESSIONS), r.returncode == 0,
                         r.stderr):
            return tap.finish()
        for opt in ("-O0", "-Os", "-O2"):
            obj = os.path.join(work, "f32%s.o" % opt)
            r = subprocess.run(CC + [opt, "-I", work, src, "-o", obj], capture_output=True,
                               text=True)
            if not tap.check("the f32 kernels compile for cortex-m4f at %s" % opt,
                             r.returncode == 0, r.stderr):
                continue
            u = subprocess.run(NM + [obj], capture_output=True, text=True).stdout.split()
            doubles = sorted(s for s in u if s.startswith("__aeabi_d") or s == "__aeabi_f2d")
            tap.check("no software double at %s (undefined: %s)" % (opt, ", ".join(doubles) or
                                                                   "none"), not doubles, "")
        # negative control: an f64 kernel needs the double routines
        src64 = os.path.join(work, "f64.c")
        r = bcgen("aot", "-k", "d=x * g + b", "-i", "x=f64[16]", "-i", "g=f64[16]", "-i",
                  "b=f64[16]", "--unroll", "none", "-o", src64)
        obj = os.path.join(work, "f64.o")
        r = subprocess.run(CC + ["-O2", "-I", work, src64, "-o", obj], capture_output=True,
                           text=True)
        u = subprocess.run(NM + [obj], capture_output=True, text=True).stdout.split()
        tap.check("negative control: an f64 kernel references __aeabi_d* (the check sees them)",
                  any(s.startswith("__aeabi_d") for s in u), " ".join(u))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return tap.finish()


if __name__ == "__main__":
    main()
