#!/usr/bin/env python3
"""The header a firmware project needs (issue 14, item 7): rank-0 operands
by value, NAME_OPERAND_OFFSET for buffers with negative strides, the
element-type, alignment and version macros, include guards unique by the
header's content (and the same on any machine, from any directory), and
name checks that reject only real clashes (i2c_scale, in2out, i16_to_q15
are fine; in0 and i2, the body's own locals, are not).

The pair is built and run with gcc and g++ on the host and, when the
tools are installed, with arm-linux-gnueabihf-gcc under qemu-arm; the C
program checks every element itself."""
import os
import re
import shutil
import subprocess
import tempfile

from _aot import STRICT, Tap, bcgen, missing_tools

tap = Tap()
work = tempfile.mkdtemp(prefix="bcgen-aot-header-")


def path(name):
    return os.path.join(work, name)


def read(name):
    with open(path(name)) as f:
        return f.read()


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, errors="replace", **kw)


KERNELS = [
    # a scalar gain and offset by value, an operand reversed in both
    # dimensions (its element [0,0] is the buffer's last)
    "-k", "flip=a * gain + offset", "-i", "a=i16[3,4]@[-4,-1]", "-i", "gain=i16[]",
    "-i", "offset=f32[]",
    # an output view with a negative stride, a bool scalar
    "-k", "mirror=where(on, v, -v)", "-i", "v=i16[2,5]", "-i", "on=bool[]",
    "--out-strides", "[-5,1]",
    # in place on a rank-0 operand: stays a pointer (it is written)
    "-k", "bump=s + t", "-i", "s=f32[]", "-i", "t=f32[]", "--inplace", "s",
    # names that look like the body's locals but are not
    "-k", "i2c_scale=in2out * 2", "-i", "in2out=i16[3]",
    "-k", "i16_to_q15=i16(q15 * 2)", "-i", "q15=i16[4]",
]
r = bcgen("aot", *KERNELS, "-o", path("pair.c"))
tap.check("bcgen aot writes the pair", r.returncode == 0, r.stderr)
header, source = read("pair.h"), read("pair.c")

for prototype in ["void flip(float *out, const int16_t *a, int16_t gain, float offset);",
                  "void mirror(int16_t *out, const int16_t *v, uint8_t on);",
                  "void bump(float *s, float t);",
                  "void i2c_scale(int16_t *out, const int16_t *in2out);",
                  "void i16_to_q15(int16_t *out, const int16_t *q15);"]:
    tap.check(f"prototype {prototype}", prototype in header, header[-3000:])
tap.check("the .c takes a by-value operand's address for the body",
          "const bcg_i16 *in1 = &gain;" in source and "const float *in2 = &offset;" in source,
          source[-3000:])
for macro, value in [("FLIP_A_OFFSET", "11"), ("FLIP_A_BYTES", "24"), ("FLIP_OUT_OFFSET", "0"),
                     ("FLIP_A_TYPE", "int16_t"), ("FLIP_OUT_TYPE", "float"),
                     ("FLIP_GAIN_TYPE", "int16_t"), ("FLIP_A_ALIGN", "2"),
                     ("MIRROR_OUT_OFFSET", "5"), ("MIRROR_OUT_STRIDES", "{-5, 1}"),
                     ("MIRROR_ON_TYPE", "uint8_t"), ("MIRROR_ON_ALIGN", "1"),
                     ("BUMP_OUT_TYPE", "float"), ("I16_TO_Q15_Q15_ALIGN", "2")]:
    tap.check(f"#define {macro} {value}", f"#define {macro} {value}\n" in header)
tap.check("BCGEN_VERSION and BCGEN_VERSION_NUMBER, defined once for any number of pairs",
          re.search(r'#ifndef BCGEN_VERSION\n#define BCGEN_VERSION "\d+\.\d+\.\d+"\n'
                    r'#define BCGEN_VERSION_NUMBER \d+\n#endif', header), header[:3000])
tap.check("the header states the alignment the pointers need",
          "Alignment: each pointer needs only its element type's own alignment" in header)
tap.check("the header says how to pass a buffer with negative strides",
          "pass buffer + NAME_OPERAND_OFFSET" in header)

MAIN = r"""#include <stdio.h>
#include "pair.h"
#include "other/pair.h"   /* same file name, other kernel: another guard */

int main(void)
{
    /* flip: buffer of 12 ints 0..11, a[r][c] = buf[11 - 4r - c] */
    FLIP_A_TYPE buf[FLIP_A_BYTES / sizeof(FLIP_A_TYPE)];
    FLIP_OUT_TYPE out[FLIP_OUT_ELEMENTS];
    for (int i = 0; i < (int)(sizeof buf / sizeof buf[0]); i++)
        buf[i] = (FLIP_A_TYPE)i;
    flip(out, buf + FLIP_A_OFFSET, 3, 0.5f);
    for (int k = 0; k < FLIP_OUT_ELEMENTS; k++)
        if (out[k] != (float)(11 - k) * 3.0f + 0.5f)
            return printf("flip %d: %g\n", k, (double)out[k]), 1;

    /* mirror: the output view's rows are reversed in memory */
    MIRROR_V_TYPE v[MIRROR_V_ELEMENTS];
    MIRROR_OUT_TYPE view[MIRROR_OUT_BYTES / sizeof(MIRROR_OUT_TYPE)];
    for (int i = 0; i < MIRROR_V_ELEMENTS; i++)
        v[i] = (MIRROR_V_TYPE)(i + 1);
    mirror(view + MIRROR_OUT_OFFSET, v, 0);
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 5; c++)
            if (view[MIRROR_OUT_OFFSET - 5 * r + c] != -v[5 * r + c])
                return printf("mirror %d %d\n", r, c), 2;

    float s = 1.25f;
    bump(&s, 2.0f);
    if (s != 3.25f)
        return printf("bump %g\n", (double)s), 3;

    int16_t in2out[3] = {1, -2, 300}, scaled[I2C_SCALE_OUT_ELEMENTS];
    i2c_scale(scaled, in2out);
    if (scaled[0] != 2 || scaled[1] != -4 || scaled[2] != 600)
        return printf("i2c_scale\n"), 4;

    float z[12] = {0}, z1[12];
    other_kernel(z1, z);
    if (z1[11] != 1.0f)
        return printf("other_kernel\n"), 5;
    printf("ok %s %d\n", BCGEN_VERSION, BCGEN_VERSION_NUMBER);
    return 0;
}
"""
os.makedirs(path("other"))
r = bcgen("aot", "-k", "other_kernel=z + 1", "-i", "z=f32[12]", "-o", path("other/pair.c"))
tap.check("a second pair of the same file name", r.returncode == 0, r.stderr)
guards = [re.search(r"#ifndef (\w+)", read(f)).group(1) for f in ("pair.h", "other/pair.h")]
tap.check("two pair.h with other kernels have other guards", guards[0] != guards[1], guards)
with open(path("main.c"), "w") as f:
    f.write(MAIN)

builds = [("gcc", ["gcc"] + STRICT + ["-Wshadow", "-Wconversion"], None),
          ("g++", ["g++", "-x", "c++", "-std=c++11", "-Wall", "-Wextra", "-Werror", "-pedantic",
                   "-O2"], None)]
if missing_tools([["arm-linux-gnueabihf-gcc"], ["qemu-arm"]]):
    tap.skip("the header's program on 32-bit ARM", "arm-linux-gnueabihf-gcc or qemu-arm not "
             "installed (make aot-deps installs them)")
else:
    builds.append(("arm-linux-gnueabihf-gcc under qemu-arm",
                   ["arm-linux-gnueabihf-gcc", "-static"] + STRICT, ["qemu-arm"]))
for label, cc, runner in builds:
    exe = path("main-" + label.split()[0])
    objects = []
    ok, log = True, ""
    # the kernels are C; with g++ only main.c is C++ (the pair's .c is built as C)
    c_compiler = cc if label != "g++" else ["gcc"] + STRICT
    for src in ("pair.c", "other/pair.c"):
        obj = path(src.replace("/", "_") + label.split()[0] + ".o")
        r = run(c_compiler + ["-I", work, "-c", path(src), "-o", obj])
        ok, log = ok and r.returncode == 0 and not r.stderr, log + r.stderr
        objects.append(obj)
    r = run(cc + ["-I", work, path("main.c"), "-x", "none"] + objects + ["-o", exe])
    ok, log = ok and r.returncode == 0 and not r.stderr, log + r.stderr
    if tap.check(f"{label}: the pair and a program calling it build warning-free", ok, log):
        r = run((runner or []) + [exe], timeout=60)
        tap.check(f"{label}: scalars by value, _OFFSET with negative strides, in place on a "
                  "scalar give the right elements", r.returncode == 0
                  and r.stdout.startswith("ok "), r.stdout + r.stderr)

# ---- guards unique by content, output the same from anywhere ----------------------------
def header_of(shape, directory, name="kernels"):
    os.makedirs(path(directory), exist_ok=True)
    r = bcgen("aot", "-k", "scale=x * 2", "-i", f"x=f32[{shape}]", "-o", name + ".c",
              cwd=path(directory))
    return r.returncode == 0, read(os.path.join(directory, name + ".h")), \
        read(os.path.join(directory, name + ".c"))


ok1, h1, c1 = header_of("8", "one")
ok2, h2, c2 = header_of("8", "two")
ok3, h3, _ = header_of("16", "three")
guard = lambda text: re.search(r"#ifndef (BCGEN_AOT_\w+)", text).group(1)
tap.check("the same command in another directory writes the same bytes",
          ok1 and ok2 and h1 == h2 and c1 == c2)
tap.check("kernels.h with the same kernel names but other shapes get other guards",
          ok3 and guard(h1) != guard(h3), (guard(h1), guard(h3)))
r = bcgen("aot", "-k", "scale=x * 2", "-i", "x=f32[8]", "-o", path("abs/kernels.c"),
          "--restrict")
tap.check("another command (--restrict) gives another guard",
          r.returncode != 0 or guard(read("abs/kernels.h")) != guard(h1))
os.makedirs(path("abs"), exist_ok=True)
r = bcgen("aot", "-k", "scale=x * 2", "-i", "x=f32[8]", "-o", path("abs/kernels.c"))
tap.check("the guard does not depend on the command's paths",
          r.returncode == 0 and guard(read("abs/kernels.h")) == guard(h1))

# ---- names: only real clashes --------------------------------------------------------------
for name in ["i2c_scale", "in2out", "i16_to_q15", "in0x", "i2c", "literally", "shared_gain",
             "out2", "input", "i_0", "in_0"]:
    ok, log = True, ""
    for argv in (["-k", f"{name}=a + 1", "-i", "a=f32[2]"],
                 ["-k", f"k={name} * 2", "-i", f"{name}=f32[2]"]):
        r = bcgen("aot", *argv, "-o", path("names.c"))
        r2 = run(["gcc"] + STRICT + ["-Wshadow", "-c", path("names.c"), "-o", os.devnull]) \
            if r.returncode == 0 else r
        ok, log = ok and r.returncode == 0 and r2.returncode == 0 and not r2.stderr, \
            log + r.stderr + r2.stderr
    tap.check(f"{name} is accepted as a kernel and as an operand name and compiles", ok, log)
for name in ["in0", "i2", "in12_pos", "in3_value", "literal0", "shared4", "out_pos"]:
    r = bcgen("aot", "-k", f"k={name} + 1", "-i", f"{name}=f32[2]", "-o", path("bad.c"))
    tap.check(f"operand name {name} (a local of the body) is still rejected",
              r.returncode == 2 and "a name the kernel uses itself" in r.stderr, r.stderr)

shutil.rmtree(work)
tap.finish()
