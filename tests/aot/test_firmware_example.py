#!/usr/bin/env python3
"""examples/firmware/ stays true: its checked-in kernels.c/kernels.h are what
the command in their header (and `make kernels`) generates today, and the
project builds into a Cortex-M4 ELF with arm-none-eabi-gcc (in a scratch
copy, so the tree is left as it was)."""
import os
import re
import shutil
import subprocess
import tempfile

from _aot import BCGEN, Tap, missing_tools

tap = Tap()
example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                       "firmware")
work = tempfile.mkdtemp(prefix="bcgen-aot-example-")
copy = os.path.join(work, "firmware")
shutil.copytree(example, copy)

with open(os.path.join(copy, "kernels.h")) as f:
    header = f.read()
with open(os.path.join(copy, "kernels.c")) as f:
    source = f.read()
command = re.search(r"^ \*   (bcgen aot .*)$", header, re.M).group(1)
with open(os.path.join(copy, "Makefile")) as f:
    makefile = f.read()
rule = re.search(r"^kernels:\n((?:\t.*\n)+)", makefile, re.M).group(1)
words = " ".join(line.strip().rstrip("\\") for line in rule.splitlines())
tap.check("`make kernels` runs the command recorded in kernels.h",
          " ".join(words.split()) == " ".join(("$(BCGEN)" + command[len("bcgen"):]).split()),
          words + "\n" + command)

r = subprocess.run(["make", "-s", "kernels", f"BCGEN={BCGEN}"], cwd=copy, capture_output=True,
                   text=True)
with open(os.path.join(copy, "kernels.h")) as f:
    new_header = f.read()
with open(os.path.join(copy, "kernels.c")) as f:
    new_source = f.read()
tap.check("the checked-in kernels are what bcgen generates now (else: make -C examples/firmware "
          "kernels)", r.returncode == 0 and new_header == header and new_source == source,
          r.stderr)

absent = missing_tools([["arm-none-eabi-gcc"]])
if absent:
    tap.skip("building examples/firmware", "arm-none-eabi-gcc is not installed")
else:
    r = subprocess.run(["make", "-s"], cwd=copy, capture_output=True, text=True)
    tap.check("examples/firmware builds firmware.elf with arm-none-eabi-gcc",
              r.returncode == 0 and os.path.exists(os.path.join(copy, "firmware.elf")),
              r.stdout + r.stderr)
    r = subprocess.run(["arm-none-eabi-nm", os.path.join(copy, "firmware.elf")],
                       capture_output=True, text=True)
    tap.check("the firmware links both kernels", re.search(r" T calibrate$", r.stdout, re.M)
              and re.search(r" T magnitude$", r.stdout, re.M), r.stdout[-500:])
shutil.rmtree(work)
tap.finish()
