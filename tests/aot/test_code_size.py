#!/usr/bin/env python3
"""Code size you control (issue 14, item 5): the AOT default unrolls fully
only outputs of at most 4 elements (AOT_DEFAULT_UNROLL_LIMIT, chosen from
bench/aot_unroll.py's measurement on a Cortex-M4F), --unroll NAME=MODE sets
one kernel's form, an explicit factor asks for loops, and --size reports
each kernel's bytes at -Os and -O2 (arm-none-eabi-gcc -mcpu=cortex-m4, or
the host's cc when it is missing)."""
import os
import re
import shutil
import tempfile

from _aot import Tap, bcgen, missing_tools

tap = Tap()
work = tempfile.mkdtemp(prefix="bcgen-aot-size-")


def forms(path):
    """kernel name -> its 'Code:' sentence."""
    with open(path) as f:
        text = f.read()
    return {m.group(1): m.group(2) for m in
            re.finditer(r"/\* (\w+) - generated.*?\* Code: ([^\n]*)", text, re.S)}


KERNELS = ["-k", "tiny=x * g + b", "-i", "x=f32[4]", "-i", "g=f32[4]", "-i", "b=f32[]",
           "-k", "mid=x * g + b", "-i", "x=f32[16]", "-i", "g=f32[16]", "-i", "b=f32[]",
           "-k", "big=x * g + b", "-i", "x=f32[64]", "-i", "g=f32[64]", "-i", "b=f32[]"]
out = os.path.join(work, "k.c")
r = bcgen("aot", *KERNELS, "-o", out)
f = forms(out) if r.returncode == 0 else {}
tap.check("default: 4 elements fully unrolled", "fully unrolled" in f.get("tiny", ""), f)
tap.check("default: 16 elements a loop unrolled by 4",
          "runs 4 groups of 4 statements" in f.get("mid", ""), f)
r = bcgen("aot", *KERNELS, "--unroll", "mid=full", "--unroll", "tiny=none", "-o", out)
f = forms(out) if r.returncode == 0 else {}
tap.check("--unroll NAME=MODE sets one kernel's form, the others keep the default",
          "fully unrolled" in f.get("mid", "") and "fully unrolled" not in f.get("tiny", "")
          and "runs 16 groups of 4" in f.get("big", ""), f)
r = bcgen("aot", *KERNELS, "--unroll", "full", "--unroll", "big=8", "-o", out)
f = forms(out) if r.returncode == 0 else {}
tap.check("--unroll full for all but big, which is a loop unrolled 8 times",
          "fully unrolled" in f.get("mid", "") and "runs 8 groups of 8" in f.get("big", ""), f)
r = bcgen("aot", *KERNELS, "--unroll", "2", "-o", out)
f = forms(out) if r.returncode == 0 else {}
tap.check("an explicit factor asks for loops even for 16 elements",
          "runs 8 groups of 2" in f.get("mid", ""), f)
for bad, needle in [("mid=fast", "--unroll takes full, none or a factor"),
                    ("nokernel=full", "--unroll nokernel=full names no kernel"),
                    ("2x=full", "NAME a kernel's name")]:
    r = bcgen("aot", *KERNELS, "--unroll", bad, "-o", out)
    tap.check(f"--unroll {bad} is a usage error", r.returncode == 2 and needle in r.stderr,
              r.stderr)


def size_table(extra):
    r = bcgen("aot", *KERNELS, *extra, "-o", out, "--size")
    rows = {m.group(1): (int(m.group(2)), int(m.group(3)))
            for m in re.finditer(r"^  (\S+(?: \S+)?) +(\d+) +(\d+)$", r.stdout, re.M)}
    return r, rows


r, rows = size_table([])
tap.check("--size prints a -Os and an -O2 column for every kernel and the text",
          r.returncode == 0 and re.search(r"^  kernel +-Os +-O2$", r.stdout, re.M)
          and all(k in rows for k in ("tiny", "mid", "big", "text (size)")),
          r.stdout + r.stderr)
cross = not missing_tools([["arm-none-eabi-gcc"]])
tap.check("--size names the compiler it used",
          ("arm-none-eabi-gcc -mcpu=cortex-m4" if cross else "host") in r.stdout, r.stdout)
_, full_rows = size_table(["--unroll", "full"])
tap.check("the default is smaller than full unrolling at 16 and 64 elements (-Os and -O2)",
          rows and full_rows and all(rows[k][i] < full_rows[k][i]
                                     for k in ("mid", "big") for i in (0, 1)),
          (rows, full_rows))
tap.check("and the same at 4 elements", rows and full_rows and rows["tiny"] == full_rows["tiny"],
          (rows, full_rows))
shutil.rmtree(work)
tap.finish()
