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

guard = re.search(r"#ifndef (BCGEN_AOT_KERNELS_H_[0-9A-F]{16})\n#define \1\n", header)
tap.check("the header has an include guard: its name and a hash of its content",
          guard and header.rstrip().endswith(f"#endif /* {guard.group(1)} */"), header[:400])
tap.check("the header is extern \"C\" for C++",
          '#ifdef __cplusplus\nextern "C" {\n#endif' in header)
tap.check("the header includes only <stdint.h>",
          re.findall(r"#include [<\"].*[>\"]", header) == ["#include <stdint.h>"])
tap.check("the source includes its header, <stdbool.h>, <stddef.h> and <stdint.h>, no <math.h> "
          "when unused",
          re.findall(r"#include [<\"].*[>\"]", source)
          == ['#include "kernels.h"', "#include <stdbool.h>", "#include <stddef.h>",
              "#include <stdint.h>"])
tap.check("typed, named, const-correct prototype (output first, non-const)",
          "void scale(float *BCGEN_RESTRICT out, const float *BCGEN_RESTRICT x, "
          "const float *BCGEN_RESTRICT gain, float bias);" in header,
          header)
tap.check("an in-place kernel takes its operand as the non-const output",
          "void accumulate(int32_t *BCGEN_RESTRICT acc, const int16_t *BCGEN_RESTRICT y);"
          in header)
tap.check("the definition uses the header's BCGEN_RESTRICT (restrict in C, __restrict in C++)",
          "void scale(float *BCGEN_RESTRICT out, const float *BCGEN_RESTRICT x," in source)
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
    scale(out, x, gain, bias);
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
tap.check("--size reports the size of each kernel at -Os and -O2",
          r.returncode == 0 and re.search(r"^  scale +\d+ +\d+$", r.stdout, re.M)
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
def rejected(argv, *needles):
    """bcgen aot ARGV is a usage error whose message holds every NEEDLE, and
    writes nothing."""
    for name in ("bad.c", "bad.h"):
        if os.path.exists(path(name)):
            os.remove(path(name))
    r = bcgen("aot", *argv, "-o", path("bad.c"))
    ok = (r.returncode == 2 and all(n in r.stderr for n in needles)
          and not os.path.exists(path("bad.c")) and not os.path.exists(path("bad.h")))
    return ok, r.stderr


for bad in ["out", "in0", "in3_pos", "i2", "shared0", "literal1", "class", "new", "NULL",
            "size_t", "INT32_MAX", "M_PI", "bcg_x", "sqrtf", "double", "_Hidden", "__x"]:
    ok, err = rejected(["-k", f"k={bad} + 1", "-i", f"{bad}=f32[2]"], f"'{bad}' is",
                       "pick another operand name")
    tap.check(f"operand name {bad} is rejected with a reason", ok, err)
for bad in ["new", "template", "sqrtf", "int8_t", "bcg_kernel2", "NAN"]:
    ok, err = rejected(["-k", f"{bad}=a + 1", "-i", "a=f32[2]"], f"'{bad}' is",
                       "pick another kernel name")
    tap.check(f"function name {bad} is rejected", ok, err)

# every name a C99 header declares, not only bcgen's own math functions (review finding 2)
for bad, header_name in [
        ("round", "<math.h>"), ("trunc", "<math.h>"), ("log10", "<math.h>"), ("exp2", "<math.h>"),
        ("hypot", "<math.h>"), ("fmax", "<math.h>"), ("fmin", "<math.h>"), ("roundf", "<math.h>"),
        ("isnan", "<math.h>"), ("signbit", "<math.h>"), ("fpclassify", "<math.h>"),
        ("offsetof", "<stddef.h>"), ("memcpy", "<string.h>"), ("abs", "<stdlib.h>"),
        ("labs", "<stdlib.h>"), ("free", "<stdlib.h>"), ("exit", "<stdlib.h>"),
        ("div", "<stdlib.h>"), ("printf", "<stdio.h>"), ("intptr_t", "<stdint.h>")]:
    ok, err = rejected(["-k", f"{bad}=a + 1", "-i", "a=f32[2]"],
                       f"'{bad}' is a name from {header_name}; pick another kernel name")
    tap.check(f"kernel name {bad} is rejected as a name from {header_name}", ok, err)
for bad, header_name in [("EOF", "<stdio.h>"), ("NULL", "<stddef.h>"), ("errno", "<errno.h>"),
                         ("FILE", "<stdio.h>"), ("SIZE_MAX", "<stdint.h>"),
                         ("INT8_MAX", "<stdint.h>"), ("bool", "<stdbool.h>"),
                         ("true", "<stdbool.h>"), ("false", "<stdbool.h>"), ("I", "<complex.h>"),
                         ("complex", "<complex.h>"), ("CHAR_BIT", "<limits.h>"),
                         ("FLT_EPSILON", "<float.h>"), ("assert", "<assert.h>")]:
    ok, err = rejected(["-k", f"k={bad} + 1", "-i", f"{bad}=f32[2]"],
                       f"'{bad}' is a name from {header_name}; pick another operand name")
    tap.check(f"operand name {bad} is rejected as a name from {header_name}", ok, err)
for bad in ["class", "delete", "this", "operator", "template"]:
    ok, err = rejected(["-k", f"k={bad} + 1", "-i", f"{bad}=f32[2]"],
                       f"'{bad}' is a C++ keyword; pick another operand name")
    tap.check(f"operand name {bad} is rejected as a C++ keyword", ok, err)
# ... while ordinary names that merely look like library prefixes stay usable
r = bcgen("aot", "-k", "total=torque * stride", "-i", "torque=f32[2]", "-i", "stride=f32[2]",
          "-k", "ema=memory + 1", "-i", "memory=f32[2]", "-o", path("fine.c"))
r2 = run(["gcc"] + STRICT + ["-Wshadow", "-include", "math.h", "-include", "stdlib.h",
                             "-include", "string.h", "-c", path("fine.c"), "-o", os.devnull])
tap.check("names like total, torque, stride, memory stay usable and compile next to the "
          "C headers with -Wshadow", r.returncode == 0 and r2.returncode == 0 and not r2.stderr,
          r.stderr + r2.stderr)

# identifiers the pair defines clash with each other (review finding 1)
two = ["-k", "f=x + 1", "-i", "x=f32[3]"]
for what, argv, needles in [
    ("a kernel named like a macro", two + ["-k", "F_X_RANK=y + 1", "-i", "y=f32[3]"],
     ["the macro F_X_RANK (kernel f, operand x)", "the kernel F_X_RANK", "rename one"]),
    ("an operand named like a macro", two + ["-k", "g=F_X_RANK + 1", "-i", "F_X_RANK=f32[3]"],
     ["the macro F_X_RANK (kernel f, operand x)", "operand F_X_RANK of kernel g", "rename one"]),
    ("an operand named like an OUT macro",
     two + ["-k", "g=F_OUT_BYTES + 1", "-i", "F_OUT_BYTES=f32[3]"],
     ["the macro F_OUT_BYTES (kernel f, its result)", "operand F_OUT_BYTES of kernel g"]),
    ("an operand named like BCGEN_RESTRICT with --restrict",
     ["-k", "f=BCGEN_RESTRICT + 1", "-i", "BCGEN_RESTRICT=f32[3]", "--restrict"],
     ["the header's macro BCGEN_RESTRICT", "operand BCGEN_RESTRICT of kernel f", "rename one"]),
    ("an operand named like another kernel", two + ["-k", "x=y + 1", "-i", "y=f32[3]"],
     ["operand x of kernel f", "the kernel x", "rename one"]),
    ("a kernel named like its own operand", ["-k", "x=x + 1", "-i", "x=f32[3]"],
     ["the kernel x", "operand x of kernel x", "rename one"]),
    ("a kernel named like an include guard", ["-k", "BCGEN_AOT_BAD_H=a + 1", "-i", "a=f32[3]"],
     ["'BCGEN_AOT_BAD_H' is in the BCGEN_ namespace", "pick another kernel name"]),
    ("an operand named BCGEN_RESTRICT without --restrict",
     ["-k", "f=BCGEN_RESTRICT + 1", "-i", "BCGEN_RESTRICT=f32[3]"],
     ["'BCGEN_RESTRICT' is in the BCGEN_ namespace", "pick another operand name"]),
]:
    ok, err = rejected(argv, *needles)
    tap.check(f"{what} is a usage error naming both", ok, err)
r = bcgen("aot", "-k", "f=x + 1", "-i", "x=f32[3]", "-k", "g=x * 2", "-i", "x=f32[3]",
          "-o", path("shared.c"))
r2 = run(["gcc"] + STRICT + ["-Wshadow", "-c", path("shared.c"), "-o", os.devnull])
tap.check("two kernels may both have an operand x (parameters are local)",
          r.returncode == 0 and r2.returncode == 0 and not r2.stderr, r.stderr + r2.stderr)
r = bcgen("aot", "-k", "k=a", "-i", "a=f32[2]", "-k", "k=b", "-i", "b=f32[2]", "-o", path("bad.c"))
tap.check("two kernels with one name are rejected", r.returncode == 2 and "two kernels" in r.stderr,
          r.stderr)
r = bcgen("aot", "-k", "a_b=c", "-i", "c=f32[2]", "-k", "a=b_c", "-i", "b_c=f32[2]",
          "-o", path("bad.c"))
tap.check("macros that would clash are rejected", r.returncode == 2 and "A_B_C_" in r.stderr
          and "(kernel a_b, operand c)" in r.stderr and "(kernel a, operand b_c)" in r.stderr,
          r.stderr)
r = bcgen("aot", "-k", "k=a +", "-i", "a=f32[2]", "-o", path("bad.c"))
tap.check("a parse error names the kernel and points at the column",
          r.returncode == 2 and "kernel k:" in r.stderr and "^" in r.stderr, r.stderr)

# ---- --math float covers ** (review finding 3) -------------------------------------------------
r = bcgen("aot", "-k", "p=a ** 2 + a ** b", "-i", "a=f32[3]", "-i", "b=f32[3]", "-o", path("pow.c"))
pow_c, pow_h = read("pow.c"), read("pow.h")
tap.check("--math float (default): f32 ** is powf, no double pow",
          r.returncode == 0 and "powf(" in pow_c and "(float)pow(" not in pow_c
          and not re.search(r"\bpow\(", pow_c) and "for powf (link your libm)" in pow_h,
          r.stderr + pow_c[-600:])
r = bcgen("aot", "-k", "p=a ** b", "-i", "a=f32[3]", "-i", "b=f32[3]", "--math", "double",
          "-o", path("powd.c"))
tap.check("--math double: f32 ** computes in double and rounds once",
          r.returncode == 0 and "(float)pow(" in read("powd.c") and "powf" not in read("powd.c"),
          r.stderr)
r = bcgen("aot", "-k", "p=a ** b", "-i", "a=f64[3]", "-i", "b=f64[3]", "-o", path("pow64.c"))
tap.check("f64 ** stays pow", r.returncode == 0 and "pow(" in read("pow64.c")
          and "powf" not in read("pow64.c"), r.stderr)
r = bcgen("aot", "-k", "p=a ** b", "-i", "a=f32[5]", "-i", "b=f32[5]", "-o", path("powrun.c"))
main_c = r"""#include "powrun.h"
#include <math.h>
#include <stdio.h>
int main(void)
{
    const float a[5] = {2.0f, 1.5f, 10.0f, 0.5f, 3.0f}, b[5] = {10.0f, -2.0f, 0.5f, 3.0f, 0.0f};
    float out[P_OUT_ELEMENTS];
    p(out, a, b);
    for (int i = 0; i < 5; i++)
        if (out[i] != (float)pow(a[i], b[i]) && fabs(out[i] - pow(a[i], b[i])) > 1e-6 * fabs(pow(a[i], b[i])))
            return printf("%d: %.9g\n", i, out[i]), 1;
    return 0;
}
"""
with open(path("powmain.c"), "w") as f:
    f.write(main_c)
r2 = run(["gcc", "-std=c99", "-O2", "-I", work, path("powmain.c"), path("powrun.c"), "-o",
          path("powmain"), "-lm"])
r3 = run([path("powmain")]) if r2.returncode == 0 else r2
tap.check("the powf kernel computes a ** b within 1e-6 of double pow",
          r.returncode == 0 and r2.returncode == 0 and r3.returncode == 0,
          r.stderr + r2.stderr + r3.stdout)

# ---- file names the .c can #include (review finding 4) ----------------------------------------
for what, argv, needle in [
    ("a non-ASCII output name", ["-o", path("k\u00fcche.c")], "the source file name 'k??che.c'"),
    ("a non-ASCII header name", ["-o", path("ok.c"), "--header", path("k\u00fcche.h")],
     "the header file name 'k??che.h'"),
    ("a header name with a quote", ["-o", path("ok.c"), "--header", path('a"b.h')],
     "the header file name 'a\"b.h'"),
    ("a header name with a backslash", ["-o", path("ok.c"), "--header", path("a\\b.h")],
     "the header file name"),
]:
    r = bcgen("aot", "-k", "k=a + 1", "-i", "a=f32[2]", *argv)
    tap.check(f"{what} is rejected before anything is written",
              r.returncode == 2 and needle in r.stderr and "printable ASCII" in r.stderr
              and not os.path.exists(path("k\u00fcche.c")) and not os.path.exists(path("ok.c")),
              r.stderr)

# ---- -- ends the options: a lone EXPR starting with '-' (issue 9, newcomer's audit) ----------
r = bcgen("aot", "-i", "a=f32[3]", "--name", "neg", "-o", path("neg.c"), "--", "-a")
tap.check("aot -i ... -- '-a' writes the kernel", r.returncode == 0
          and "void neg(float *out, const float *a);" in read("neg.h")
          and " -- -a\n" in read("neg.h"), r.stderr)
r = bcgen("aot", "-k", "neg2=-a", "-i", "a=f32[3]", "-o", path("neg2.c"), "--", "x")
tap.check("after -k kernels, an argument after -- is a usage error",
          r.returncode == 2 and "after -- only one EXPR" in r.stderr, r.stderr)
r = bcgen("aot", "-i", "a=f32[3]", "-k", "k=a", "-o", path("early.c"))
tap.check("-i before a -k kernel is still an error",
          r.returncode == 2 and "-i a=f32[3] comes before any kernel" in r.stderr, r.stderr)
r = bcgen("aot", "-i", "a=f32[3]", "--name", "k", "-o", path("early.c"))
tap.check("-i with no kernel at all is still an error",
          r.returncode == 2 and "-i a=f32[3] comes before any kernel" in r.stderr, r.stderr)

# ---- names that would break the pair's comments or #include (issue 9, finding 10) ---------------
os.makedirs(path("x/*y"))
os.makedirs(path("c*"))
for flag, name, needle in [
    ("-o", "x/*y/k.c", "holds '/*'"), ("-o", "c*/k.c", "holds '*/'"), ("-o", "x//k.c", "holds '//'"),
    ("-o", "k??-.c", "trigraph '??-'"), ("-o", "k??=.c", "trigraph '??='"),
    ("--header", "h??/.h", "trigraph '??/'"), ("--header", "x/*y/k.h", "holds '/*'"),
]:
    argv = ["-o", path(name)] if flag == "-o" else ["-o", path("ok.c"), "--header", path(name)]
    r = bcgen("aot", "-k", "k=a + 1", "-i", "a=f32[2]", *argv)
    written = [f for f in ("x/*y/k.c", "x/*y/k.h", "c*/k.c", "k??-.c", "k??=.c", "ok.c", "ok.h")
               if os.path.exists(path(f))]
    tap.check(f"{flag} {name} is a usage error naming the flag and the problem",
              r.returncode == 2 and f"{flag} '" in r.stderr and needle in r.stderr
              and not written, r.stderr + str(written))
r = bcgen("aot", "-k", "k=a + 1", "-i", "a=f32[2]", "-o", path("k??x.c"))
tap.check("?? not followed by a trigraph character is allowed", r.returncode == 0, r.stderr)
for header in (path("same.c"), path("./same.c"), path("x/../same.c")):
    r = bcgen("aot", "-k", "k=a + 1", "-i", "a=f32[2]", "-o", path("same.c"), "--header", header)
    tap.check(f"--header {header} equal to -o is a usage error",
              r.returncode == 2 and "is the same file as -o" in r.stderr
              and not os.path.exists(path("same.c")), r.stderr)
r = bcgen("aot", "-k", "k=a + 1", "-i", "a=f32[2]", "-o", "same.c", "--header",
          os.path.realpath(path("same.c")), cwd=work)
tap.check("--header as an absolute path to -o's relative file is a usage error",
          r.returncode == 2 and "is the same file as -o" in r.stderr, r.stderr)

# ---- two headers of one name in one project (review finding 5) ----------------------------------
os.makedirs(path("motor"))
os.makedirs(path("sensor"))
r = bcgen("aot", "-k", "drive=a * 2", "-i", "a=f32[4]", "-o", path("motor/kernels.c"))
r2 = bcgen("aot", "-k", "filter=a + 1", "-i", "a=f32[4]", "-o", path("sensor/kernels.c"))
guards = [re.search(r"#ifndef (\w+)", read(f"{d}/kernels.h")).group(1) for d in ("motor", "sensor")]
tap.check("motor/kernels.h and sensor/kernels.h get different include guards",
          r.returncode == 0 and r2.returncode == 0 and guards[0] != guards[1], guards)
with open(path("both.c"), "w") as f:
    f.write('#include "motor/kernels.h"\n#include "sensor/kernels.h"\n'
            "void use(float *out, const float *a);\n"
            "void use(float *out, const float *a) { drive(out, a); filter(out, a); }\n")
r = run(["gcc"] + STRICT + ["-I", work, "-c", path("both.c"), "-o", os.devnull])
tap.check("a file including both headers sees both kernels", r.returncode == 0 and not r.stderr,
          r.stderr)

# ---- an in-place kernel's output is its operand's memory (review finding 6) ----------------------
r = bcgen("aot", "-k", "bump=a + 1", "-i", "a=i16[3,4]@[8,2]", "--inplace", "a",
          "-o", path("inplace.c"))
inplace_h = read("inplace.h")
out_line = re.search(r"^ \*   out .*$", inplace_h, re.M)
tap.check("the in-place header describes the output as the operand's memory, not a buffer",
          r.returncode == 0 and out_line and "no separate buffer" in out_line.group(0)
          and "written over a's elements, with its strides" in out_line.group(0)
          and "C-contiguous" not in out_line.group(0)
          and "/* bump: a = (a + 1)" in inplace_h, r.stderr + inplace_h[-900:])
for macro, value in [("BUMP_OUT_SHAPE", "{3, 4}"), ("BUMP_OUT_ELEMENTS", "12"),
                     ("BUMP_OUT_STRIDES", "{8, 2}"), ("BUMP_OUT_BYTES", "46"),
                     ("BUMP_A_BYTES", "46")]:
    tap.check(f"in place: the header defines {macro} {value}",
              f"#define {macro} {value}\n" in inplace_h)
tap.check("the header comment says what NAME_OUT_* mean for an in-place kernel",
          "for an in-place\n * kernel there is no `out` buffer" in inplace_h, inplace_h[:2000])
main_c = r"""#include "inplace.h"
#include <stdio.h>
int main(void)
{
    int16_t a[BUMP_OUT_BYTES / sizeof(int16_t) + 4];
    const long long strides[] = BUMP_OUT_STRIDES, shape[] = BUMP_OUT_SHAPE;
    int touched[sizeof a / sizeof a[0]] = {0};
    for (unsigned i = 0; i < sizeof a / sizeof a[0]; i++) a[i] = (int16_t)(100 + i);
    bump(a);
    for (long long r = 0; r < shape[0]; r++)
        for (long long c = 0; c < shape[1]; c++) touched[r * strides[0] + c * strides[1]] = 1;
    for (unsigned i = 0; i < sizeof a / sizeof a[0]; i++)
        if (a[i] != (int16_t)(100 + i + touched[i])) return printf("%u: %d\n", i, a[i]), 1;
    /* the last element written is the last of the BUMP_OUT_BYTES */
    return touched[BUMP_OUT_BYTES / sizeof(int16_t) - 1] ? 0 : 2;
}
"""
with open(path("inplace_main.c"), "w") as f:
    f.write(main_c)
r2 = run(["gcc", "-std=c99", "-O2", "-I", work, path("inplace_main.c"), path("inplace.c"), "-o",
          path("inplace_main")])
r3 = run([path("inplace_main")]) if r2.returncode == 0 else r2
tap.check("the in-place kernel writes exactly the strided elements within BUMP_OUT_BYTES",
          r2.returncode == 0 and r3.returncode == 0, r2.stderr + r3.stdout)

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
