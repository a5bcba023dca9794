#!/usr/bin/env python3
"""bcgen aot --spec FILE (issue 14, item 8; docs/spec.md): a spec file
means what its command line means (the same kernels, byte for byte), the
pair is the same bytes from any directory, per-kernel unroll, and every
error names FILE:LINE:COLUMN and writes nothing."""
import os
import re
import shutil
import subprocess
import tempfile

from _aot import STRICT, Tap, bcgen

tap = Tap()
work = tempfile.mkdtemp(prefix="bcgen-aot-spec-")


def path(name):
    return os.path.join(work, name)


def write(name, text):
    os.makedirs(os.path.dirname(path(name)) or work, exist_ok=True)
    with open(path(name), "w", newline="") as f:
        f.write(text)


def read(name):
    with open(path(name)) as f:
        return f.read()


SPEC = """# kernels.bcg - a test spec
bcgen-spec 1

restrict            # whole pair
unroll 4

kernel scale = x * gain + bias
    input x = f32[4,16]
    input gain = f32[16]
    input bias = f32[]
    unroll full

kernel relu = maximum(v, 0)   # in place
\tinput v = i16[64]
\tinplace v

kernel grad = g * a
    input g = f32[8, 16]
    input a = f32[16]
    reduce sum
    to a
"""
COMMAND = ["-k", "scale=x * gain + bias", "-i", "x=f32[4,16]", "-i", "gain=f32[16]",
           "-i", "bias=f32[]", "--unroll", "scale=full",
           "-k", "relu=maximum(v, 0)", "-i", "v=i16[64]", "--inplace", "v",
           "-k", "grad=g * a", "-i", "g=f32[8, 16]", "-i", "a=f32[16]", "--reduce", "sum",
           "--to", "a", "--restrict", "--unroll", "4"]

write("a/kernels.bcg", SPEC)
r = bcgen("aot", "--spec", "kernels.bcg", "-o", "kernels.c", cwd=path("a"))
tap.check("bcgen aot --spec writes the pair", r.returncode == 0, r.stderr)
r2 = bcgen("aot", *COMMAND, "-o", path("cli/kernels.c")) if os.makedirs(path("cli")) is None \
    else None
tap.check("the same kernels on the command line", r2.returncode == 0, r2.stderr)


def without_command(text):
    return re.sub(r"^ \*   bcgen aot .*$", "", text, flags=re.M)


spec_c, spec_h = read("a/kernels.c"), read("a/kernels.h")
tap.check("the spec's .c is the command line's (but for the recorded command)",
          without_command(spec_c) == without_command(read("cli/kernels.c")))
tap.check("the spec's .h is the command line's (but for the recorded command; the guard "
          "does not hold it)", without_command(spec_h) == without_command(read("cli/kernels.h")))
tap.check("the header records the command with base names",
          " *   bcgen aot --spec kernels.bcg -o kernels.c\n" in spec_h, spec_h[:600])
tap.check("per-kernel unroll: scale is fully unrolled, relu grouped by 4",
          "scale - generated" in spec_c and re.search(
              r"/\* scale - .*?Code: fully unrolled", spec_c, re.S)
          and re.search(r"/\* relu - .*?Code: loop nest; the innermost loop runs 16 groups of 4",
                        spec_c, re.S), spec_c[:3000])

# the same spec from another directory, by an absolute path, into a build tree
write("elsewhere/src/kernels.bcg", SPEC)
os.makedirs(path("elsewhere/build/gen"))
r = bcgen("aot", "--spec", path("elsewhere/src/kernels.bcg"), "-o",
          path("elsewhere/build/gen/kernels.c"))
tap.check("the same spec elsewhere (absolute paths) gives the same bytes",
          r.returncode == 0 and read("elsewhere/build/gen/kernels.c") == spec_c
          and read("elsewhere/build/gen/kernels.h") == spec_h, r.stderr)
r = bcgen("aot", "--spec", path("elsewhere/src/kernels.bcg"), "-o",
          path("elsewhere/build/gen/kernels.c"), "--header", path("elsewhere/build/inc/k.h"))
tap.check("a header in a missing directory: an error naming it, nothing written",
          r.returncode != 0 and "elsewhere/build/inc/k.h" in r.stderr, r.stderr)
r = subprocess.run(["gcc"] + STRICT + ["-I", path("a"), "-c", path("a/kernels.c"), "-o",
                                       os.devnull], capture_output=True, text=True)
tap.check("the pair compiles warning-free", r.returncode == 0 and not r.stderr, r.stderr)
write("crlf/kernels.bcg", SPEC.replace("\n", "\r\n").replace("# whole pair", "# caf\u00e9"))
r = bcgen("aot", "--spec", path("crlf/kernels.bcg"), "-o", path("crlf/kernels.c"))
tap.check("CR LF line ends are read as LF; comments may hold UTF-8",
          r.returncode == 0 and read("crlf/kernels.c") == spec_c, r.stderr)

# ---- errors: FILE:LINE:COLUMN, exit status, nothing written --------------------------------
HEAD = "bcgen-spec 1\n"
for what, text, status, needle in [
    ("an unknown directive", HEAD + "kernal k = a\n", 2, "bad.bcg:2:1: unknown directive 'kernal'"),
    ("no version line", "kernel k = a\n", 2, "bad.bcg:1:1: the first directive must be 'bcgen-spec 1'"),
    ("another version", "bcgen-spec 2\n", 2, "bad.bcg:1:12: this bcgen reads spec version 1; the file asks for '2'"),
    ("an empty file", "# nothing\n", 2, "bad.bcg:1:1: the file holds no directive"),
    ("no kernel", HEAD + "restrict\n", 2, "bad.bcg:2:1: the file defines no kernel"),
    ("the version twice", HEAD + "bcgen-spec 1\n", 2, "bad.bcg:2:1: 'bcgen-spec' comes once"),
    ("an input before any kernel", HEAD + "input a = f32[3]\n", 2,
     "bad.bcg:2:1: 'input' comes before any kernel"),
    ("a pair option inside a kernel", HEAD + "kernel k = a\n  input a = f32[3]\n  math double\n", 2,
     "bad.bcg:4:3: 'math' is an option of the whole pair"),
    ("a flag with an argument", HEAD + "restrict yes\nkernel k = a\n", 2,
     "bad.bcg:2:10: 'restrict' takes no argument"),
    ("a value missing", HEAD + "kernel k = a\n  input a = f32[3]\n  reduce\n", 2,
     "bad.bcg:4:3: 'reduce' needs an argument"),
    ("kernel without =", HEAD + "kernel k a + 1\n", 2, "bad.bcg:2:10: expected '='"),
    ("kernel with a bad name", HEAD + "kernel 2k = a\n", 2, "bad.bcg:2:8: 'kernel' takes NAME = ..."),
    ("a parse error in an expression, at its column", HEAD + "kernel k = a +* 2\n  input a = f32[3]\n",
     2, "bad.bcg:2:15: kernel k: expected an operand"),
    ("a bad dtype, at the operand", HEAD + "kernel k = a + b\n  input a = f32[3]\n  input b = f33[3]\n",
     2, "bad.bcg:4:9: operand 'b=f33[3]': unknown dtype 'f33'"),
    ("shapes that do not broadcast, at the kernel", HEAD + "kernel k = a + b\n  input a = f32[3]\n"
     "  input b = f32[4]\n", 1, "bad.bcg:2:8: kernel k: cannot broadcast"),
    ("a bad unroll mode", HEAD + "kernel k = a\n  input a = f32[3]\n  unroll fast\n", 2,
     "bad.bcg:4:10: --unroll takes full, none or a factor"),
    ("inplace naming no operand", HEAD + "kernel k = a\n  input a = f32[3]\n  inplace b\n", 2,
     "bad.bcg:4:11: --inplace names 'b'"),
    ("a reserved name", HEAD + "kernel round = a\n  input a = f32[3]\n", 2,
     "bad.bcg:2:8: 'round' is a name from <math.h>"),
    ("a kernel without inputs", HEAD + "kernel k = 1\nkernel j = a\n  input a = f32[3]\n", 2,
     "bad.bcg:2:8: kernel k has no operands"),
    ("a non-ASCII byte outside a comment", HEAD + "kernel caf\u00e9 = a\n", 2,
     "bad.bcg:2:11: the byte 0xc3"),
    ("a control byte", HEAD + "kernel k = a\x0b\n", 2, "bad.bcg:2:13: the byte 0x0b"),
]:
    write("bad.bcg", text)
    for leftover in ("bad.c", "bad.h"):
        if os.path.exists(path(leftover)):
            os.remove(path(leftover))
    r = bcgen("aot", "--spec", "bad.bcg", "-o", "bad.c", cwd=work)
    tap.check(f"{what}: exit {status}, '{needle}'", r.returncode == status and needle in r.stderr
              and not os.path.exists(path("bad.c")), r.stderr)

for what, argv, needle in [
    ("a missing file", ["--spec", "nope.bcg", "-o", "x.c"], "--spec nope.bcg: cannot read it"),
    ("-k with --spec", ["--spec", "a/kernels.bcg", "-k", "f=a", "-o", "x.c"],
     "the command line takes only -o, --header, --misra-report and --size"),
    ("--spec twice", ["--spec", "a/kernels.bcg", "--spec", "a/kernels.bcg", "-o", "x.c"],
     "--spec is given twice"),
    ("no -o", ["--spec", "a/kernels.bcg"], "no output"),
]:
    r = bcgen("aot", *argv, cwd=work)
    tap.check(f"usage error: {what}", r.returncode == 2 and needle in r.stderr, r.stderr)
write("k??=.bcg", SPEC)
r = bcgen("aot", "--spec", "k??=.bcg", "-o", "tri.c", cwd=work)
tap.check("a spec name with a trigraph (quoted into the header) is refused",
          r.returncode == 2 and "trigraph" in r.stderr and not os.path.exists(path("tri.c")),
          r.stderr)
with open(path("nul.bcg"), "wb") as f:
    f.write(b"bcgen-spec 1\nkernel k = a\x00\n")
r = bcgen("aot", "--spec", "nul.bcg", "-o", "x.c", cwd=work)
tap.check("a NUL byte is refused", r.returncode == 2 and "NUL byte" in r.stderr, r.stderr)
r = bcgen("aot", "--help")
tap.check("bcgen aot --help documents --spec and --unroll NAME=MODE",
          "--spec FILE" in r.stdout and "--unroll NAME=MODE" in r.stdout)
r = bcgen("aot", "-k", "f=a", "-i", "a=f32[2]", "--unroll", "g=full", "-o", path("u.c"))
tap.check("--unroll NAME=MODE naming no kernel is an error",
          r.returncode == 2 and "--unroll g=full names no kernel" in r.stderr, r.stderr)

shutil.rmtree(work)
tap.finish()
