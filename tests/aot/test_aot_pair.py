#!/usr/bin/env python3
"""The contract of `bcgen aot` on the host: what the .c/.h pair contains
(typed const-correct prototypes, size macros, include guard, extern "C",
only <stdint.h>/<stddef.h>/<math.h>, the command that made it), that it
holds no globals and calls nothing but libm, that a C++ file including the
header builds with g++ -pedantic -Werror and calls a kernel correctly, that
the recorded command regenerates the pair byte for byte, and the errors
(names that would clash in C, offsets beyond 32 bits, bad arguments)."""
import os
import re
import shutil
import subprocess
import tempfile

from _aot import STRICT, Tap, bcgen

tap = Tap()
work = tempfile.mkdtemp(prefix="bcgen-aot-pair-")


def path(name):
    return os.path.join(work, name)


def read(name):
    with open(path(name)) as f:
        return f.read()


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, **kw)


# ---- a pair of three kernels ------------------------------------------------------
args = ["aot",
        "-k", "scale=x * gain + bias", "-i", "x=f32[4,8]", "-i", "gain=f32[8]", "-i", "bias=f32[]",
        "-k", "accumulate=acc + y", "-i", "acc=i32[6]", "-i", "y=i16[6]", "--inplace", "acc",
        "-k", "clamp=u8(clip(p, 10, 200))", "-i", "p=i16[2,3]@[1,2]", "-i", "unused=f64[3]",
        "-o", path("kernels.c"), "--restrict"]
r = bcgen(*args, cwd=work)
tap.check("bcgen aot -k ... -k ... writes a pair", r.returncode == 0, r.stderr)
header = read("kernels.h")
source = read("kernels.c")

tap.check("the header has an include guard",
          re.search(r"#ifndef BCGEN_AOT_KERNELS_H\n#define BCGEN_AOT_KERNELS_H\n", header)
          and header.rstrip().endswith("#endif /* BCGEN_AOT_KERNELS_H */"), header[:400])
tap.check("the header is extern \"C\" for C++",
          '#ifdef __cplusplus\nextern "C" {\n#endif' in header)
tap.check("the header includes only <stdint.h>",
          re.findall(r"#include [<\"].*[>\"]", header) == ["#include <stdint.h>"])
tap.check("the source includes its header, <stddef.h> and <stdint.h>, no <math.h> when unused",
          re.findall(r"#include [<\"].*[>\"]", source)
          == ['#include "kernels.h"', "#include <stddef.h>", "#include <stdint.h>"])
tap.check("typed, named, const-correct prototype (output first, non-const)",
          "void scale(float *BCGEN_RESTRICT out, const float *BCGEN_RESTRICT x, "
          "const float *BCGEN_RESTRICT gain, const float *BCGEN_RESTRICT bias);" in header,
          header)
tap.check("an in-place kernel takes its operand as the non-const output",
          "void accumulate(int32_t *BCGEN_RESTRICT acc, const int16_t *BCGEN_RESTRICT y);"
          in header)
tap.check("the definition uses C99 restrict",
          "void scale(float *restrict out, const float *restrict x," in source)
for macro, value in [("SCALE_OUT_SHAPE", "{4, 8}"), ("SCALE_OUT_ELEMENTS", "32"),
                     ("SCALE_OUT_BYTES", "128"), ("SCALE_X_RANK", "2"), ("SCALE_GAIN_SHAPE", "{8}"),
                     ("SCALE_GAIN_BYTES", "32"), ("SCALE_BIAS_RANK", "0"),
                     ("SCALE_BIAS_ELEMENTS", "1"), ("SCALE_BIAS_BYTES", "4"),
                     ("ACCUMULATE_OUT_BYTES", "24"), ("ACCUMULATE_Y_BYTES", "12"),
                     ("CLAMP_P_STRIDES", "{1, 2}"), ("CLAMP_P_BYTES", "12"),
                     ("CLAMP_OUT_BYTES", "6"), ("CLAMP_UNUSED_BYTES", "24")]:
    tap.check(f"the header defines {macro} {value}", f"#define {macro} {value}\n" in header)
tap.check("the header states the exact command",
          "bcgen aot -k 'scale=x * gain + bias' -i 'x=f32[4,8]'" in header
          and "--inplace acc" in header and "--restrict" in header)
tap.check("an unused operand is still a parameter, marked used", "(void)unused;" in source)

# ---- it compiles, has no globals and calls nothing but libm ------------------------------
for cc in ["gcc", "clang"]:
    r = run([cc] + STRICT + ["-Wmissing-prototypes", "-c", path("kernels.c"), "-o",
                             path(f"kernels_{cc}.o")])
    tap.check(f"the source compiles with {cc} -std=c99 -pedantic -Werror", r.returncode == 0
              and not r.stderr, r.stderr)
r = run(["nm", path("kernels_gcc.o")])
symbols = [line.split()[-2:] for line in r.stdout.splitlines()]
tap.check("no data symbols (no globals)", all(kind in "TtU" for kind, _ in symbols), r.stdout)
tap.check("the only global symbols are the kernels",
          sorted(name for kind, name in symbols if kind == "T") == ["accumulate", "clamp", "scale"],
          r.stdout)
tap.check("nothing is called (no malloc, no libc)", not [n for k, n in symbols if k == "U"],
          r.stdout)

# ---- a C++ program includes the header, links the kernels and calls them ------------------
cxx = r"""#include "kernels.h"
#include <cstdio>
int main()
{
    float out[SCALE_OUT_ELEMENTS], x[SCALE_X_ELEMENTS], gain[SCALE_GAIN_ELEMENTS], bias = 0.5f;
    for (int i = 0; i < SCALE_X_ELEMENTS; i++) x[i] = (float)i;
    for (int i = 0; i < SCALE_GAIN_ELEMENTS; i++) gain[i] = 2.0f;
    scale(out, x, gain, &bias);
    int32_t acc[ACCUMULATE_OUT_ELEMENTS] = {1, 2, 3, 4, 5, 6};
    const int16_t y[ACCUMULATE_Y_ELEMENTS] = {10, 20, 30, 40, 50, -60};
    accumulate(acc, y);
    const long long shape[] = SCALE_OUT_SHAPE;
    std::printf("%g %g %d %d %lld\n", out[0], out[31], acc[0], acc[5], shape[1]);
    return 0;
}
"""
with open(path("use.cpp"), "w") as f:
    f.write(cxx)
r = run(["g++", "-std=c++11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I", work,
         path("use.cpp"), path("kernels_gcc.o"), "-o", path("use")])
tap.check("a C++ file including the header builds with g++ -pedantic -Werror",
          r.returncode == 0 and not r.stderr, r.stderr)
if r.returncode == 0:
    r = run([path("use")])
    tap.check("the C++ program gets the kernels' results", r.stdout.strip() == "0.5 62.5 11 -54 8",
              r.stdout + r.stderr)

# ---- the recorded command regenerates the pair byte for byte ------------------------------
command = re.search(r"^ \*   (bcgen aot .*)$", header, re.M).group(1)
saved = (header, source)
os.remove(path("kernels.c"))
os.remove(path("kernels.h"))
bindir = os.path.dirname(os.path.abspath(os.path.join(os.environ.get("BUILD", "build"), "bcgen")))
r = run(["sh", "-c", command], cwd=work, env=dict(os.environ, PATH=bindir + ":" + os.environ["PATH"]))
tap.check("the command in the header regenerates the pair", r.returncode == 0
          and (read("kernels.h"), read("kernels.c")) == saved, r.stderr)

# ---- one kernel, math, --header, empty results ------------------------------------------
r = bcgen("aot", "sqrt(v) * w", "-i", "v=f32[3]", "-i", "w=f64[]", "--name", "norm",
          "-o", path("one.c"), "--header", path("include_one.h"))
tap.check("a lone EXPR with --name and --header", r.returncode == 0, r.stderr)
one_h, one_c = read("include_one.h"), read("one.c")
tap.check("the source includes <math.h> when a math function is used",
          "#include <math.h>\n" in one_c and '#include "include_one.h"' in one_c)
tap.check("the header names the math functions the source needs",
          "<math.h>\n * for sqrtf (link your libm)" in one_h, one_h[:900])
r = run(["gcc"] + STRICT + ["-c", path("one.c"), "-o", os.devnull])
tap.check("the single-kernel source compiles", r.returncode == 0 and not r.stderr, r.stderr)

r = bcgen("aot", "-k", "nothing=a + b", "-i", "a=i8[0,3]", "-i", "b=i8[3]", "-o", path("empty.c"))
r2 = run(["gcc"] + STRICT + ["-c", path("empty.c"), "-o", os.devnull])
tap.check("an empty result compiles warning-free (parameters marked used)",
          r.returncode == 0 and r2.returncode == 0 and not r2.stderr, r.stderr + r2.stderr)

# ---- --size ------------------------------------------------------------------------------
r = bcgen("aot", "-k", "scale=x * 2", "-i", "x=f32[64]", "-o", path("sized.c"), "--size")
tap.check("--size reports the size of each kernel",
          r.returncode == 0 and re.search(r"^  scale +\d+ bytes$", r.stdout, re.M)
          and "text" in r.stdout, r.stdout + r.stderr)

# ---- 32-bit positions ------------------------------------------------------------------------
big = ["-k", "big=a + 1", "-i", "a=u8[65536,32769]"]
r = bcgen("aot", *big, "-o", path("big.c"))
tap.check("positions beyond 31 bits are an error at generation time",
          r.returncode == 1 and "beyond a 32-bit ptrdiff_t" in r.stderr
          and "--index-bits 64" in r.stderr and not os.path.exists(path("big.c")), r.stderr)
r = bcgen("aot", *big, "-o", path("big.c"), "--index-bits", "64", "--unroll", "none")
tap.check("--index-bits 64 accepts them and leaves a PTRDIFF_MAX check in the source",
          r.returncode == 0
          and "bcg_check_index_size[PTRDIFF_MAX >= 2147549184 ? 1 : -1]" in read("big.c"),
          r.stderr)
r = bcgen("aot", "-k", "fits=a + 1", "-i", "a=u8[65536,32767]", "-o", path("fits.c"))
tap.check("just under 2^31 positions is accepted", r.returncode == 0, r.stderr)

# ---- names that would clash in C or C++ ------------------------------------------------------
for bad in ["out", "in0", "in3_pos", "i2", "shared0", "literal1", "class", "new", "NULL",
            "size_t", "INT32_MAX", "M_PI", "bcg_x", "sqrtf", "double", "_Hidden", "__x"]:
    r = bcgen("aot", "-k", f"k={bad} + 1", "-i", f"{bad}=f32[2]", "-o", path("bad.c"))
    tap.check(f"operand name {bad} is rejected with a reason",
              r.returncode == 2 and ("rename the operand" in r.stderr or "not" in r.stderr),
              r.stderr)
for bad in ["new", "template", "sqrtf", "int8_t", "bcg_kernel2", "NAN"]:
    r = bcgen("aot", "-k", f"{bad}=a + 1", "-i", "a=f32[2]", "-o", path("bad.c"))
    tap.check(f"function name {bad} is rejected", r.returncode == 2 and "kernel" in r.stderr,
              r.stderr)
r = bcgen("aot", "-k", "k=a", "-i", "a=f32[2]", "-k", "k=b", "-i", "b=f32[2]", "-o", path("bad.c"))
tap.check("two kernels with one name are rejected", r.returncode == 2 and "two kernels" in r.stderr,
          r.stderr)
r = bcgen("aot", "-k", "a_b=c", "-i", "c=f32[2]", "-k", "a=b_c", "-i", "b_c=f32[2]",
          "-o", path("bad.c"))
tap.check("macros that would clash are rejected", r.returncode == 2 and "A_B_C_" in r.stderr,
          r.stderr)
r = bcgen("aot", "-k", "k=a +", "-i", "a=f32[2]", "-o", path("bad.c"))
tap.check("a parse error names the kernel and points at the column",
          r.returncode == 2 and "kernel k:" in r.stderr and "^" in r.stderr, r.stderr)

# ---- usage --------------------------------------------------------------------------------------
for what, argv, message in [
    ("no -o", ["-k", "k=a", "-i", "a=f32[2]"], "no output"),
    ("no kernel", ["-o", path("x.c")], "no kernel"),
    ("-i before any kernel", ["-i", "a=f32[2]", "-k", "k=a", "-o", path("x.c")], "before any kernel"),
    ("a lone EXPR without --name", ["a", "-i", "a=f32[2]", "-o", path("x.c")], "--name"),
    ("-k without =", ["-k", "k", "-o", path("x.c")], "NAME=EXPR"),
    ("--math other", ["-k", "k=a", "-i", "a=f32[2]", "--math", "half", "-o", path("x.c")], "float or double"),
    ("--index-bits 48", ["-k", "k=a", "-i", "a=f32[2]", "--index-bits", "48", "-o", path("x.c")], "32 or 64"),
]:
    r = bcgen("aot", *argv)
    tap.check(f"usage error: {what}", r.returncode == 2 and message in r.stderr, r.stderr)
r = bcgen("aot", "--help")
tap.check("bcgen aot --help documents the options",
          r.returncode == 0 and all(o in r.stdout for o in ["-k NAME=EXPR", "--header", "--restrict",
                                                             "--math", "--unroll", "--size",
                                                             "--index-bits"]))
r = run([os.path.join(os.environ.get("BUILD", "build"), "bcgen"), "--help"])
tap.check("bcgen --help lists aot", "  aot " in r.stdout)

shutil.rmtree(work)
tap.finish()
