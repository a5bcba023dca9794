#!/usr/bin/env python3
"""AOT programs that fuse (issue 12 part 3) on the host: `bcgen aot` of a
program whose statements iterate over one result shape writes NAME_fused,
computing every output in one pass (several reductions included), and the
wrapper NAME calls it; the pair builds with the strict flags (gcc and
clang), and NAME, built into a shared object with -ffp-contract=off and
called through ctypes, writes every output bit for bit what the JIT's
`bcgen run` writes (and, when the program does not fuse, still the
statements' kernels in order).  The 32-bit ARM run is test_qemu_arm.py's
"program" case."""
import ctypes as C
import os
import shutil
import subprocess
import tempfile

import numpy as np

from _aot import STRICT, Tap, bcgen

tap = Tap()
NP = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i16": np.int16,
      "i64": np.int64, "bool": np.bool_}

# (label, program, operands (name, dtype, shape), flags, fuses)
CASES = [
    ("forward + gradient", "y = g * a; s = y", [("g", "f32", (9, 17)), ("a", "f32", (17,))],
     ["--reduce", "s=sum", "--to", "s=a"], True),
    ("backward: two gradients over the rows and dx",
     "dw = dy * x; db = dy; dx = dy * w",
     [("dy", "f32", (33, 40)), ("x", "f32", (33, 40)), ("w", "f32", (1, 40))],
     ["--reduce", "dw=sum", "--out-shape", "dw=[1,40]", "--reduce", "db=mean", "--out-shape",
      "db=[40]"], True),
    ("three reductions along the rows, f64",
     "s = g * a; m = g - a; v = abs(a)", [("g", "f64", (12, 50)), ("a", "f64", (12, 50))],
     ["--reduce", "s=sum", "--out-shape", "s=[12,1]", "--reduce", "m=max", "--out-shape",
      "m=[12,1]", "--reduce", "v=mean", "--out-shape", "v=[12,1]"], True),
    ("integer sum, product and any", "s = g * a; p = g + 1; n = a > 0",
     [("g", "i32", (7, 9)), ("a", "i32", (7, 9))],
     ["--reduce", "s=sum", "--out-shape", "s=[1,9]", "--reduce", "p=prod", "--out-shape",
      "p=[1,9]", "--reduce", "n=any", "--out-shape", "n=[9]"], True),
    ("reductions over rows and columns do not fuse", "s = g * a; v = g",
     [("g", "f32", (6, 8)), ("a", "f32", (6, 8))],
     ["--reduce", "s=sum", "--out-shape", "s=[1,8]", "--reduce", "v=sum", "--out-shape",
      "v=[6,1]"], False),
]


def data(rng, dtype, shape):
    if dtype.startswith("f"):
        return rng.uniform(-3, 3, shape).astype(NP[dtype])
    return rng.integers(-5, 6, shape).astype(NP[dtype])


work = tempfile.mkdtemp(prefix="bcgen-aot-fused-")
rng = np.random.default_rng(12)
for number, (label, program, operands, flags, fuses) in enumerate(CASES):
    folder = os.path.join(work, "case%d" % number)
    os.makedirs(folder)
    specs = ["%s=%s[%s]" % (n, t, ",".join(map(str, s))) for n, t, s in operands]
    r = bcgen("aot", "-k", "prog=" + program, *sum((["-i", s] for s in specs), []), *flags,
              "-o", os.path.join(folder, "pair.c"))
    if not tap.check(f"{label}: bcgen aot writes the pair", r.returncode == 0, r.stderr):
        continue
    with open(os.path.join(folder, "pair.c")) as f:
        source = f.read()
    tap.check(f"{label}: the wrapper {'calls prog_fused' if fuses else 'calls each statement'}",
              ("    prog_fused(" in source) == fuses and ("void prog_fused(" in source) == fuses,
              source[-600:])
    for cc in ("gcc", "clang"):
        if shutil.which(cc):
            r = subprocess.run([cc] + STRICT + ["-c", os.path.join(folder, "pair.c"), "-o",
                                                os.path.join(folder, cc + ".o")],
                               capture_output=True, text=True)
            tap.check(f"{label}: the pair builds with {cc} {' '.join(STRICT)}",
                      r.returncode == 0, r.stderr)
    library = os.path.join(folder, "pair.so")
    r = subprocess.run(["gcc", "-std=c99", "-O2", "-ffp-contract=off", "-fPIC", "-shared",
                        os.path.join(folder, "pair.c"), "-o", library, "-lm"],
                       capture_output=True, text=True)
    if not tap.check(f"{label}: the pair builds as a shared object", r.returncode == 0, r.stderr):
        continue
    # the JIT's outputs (bcgen run), one .npy per statement
    statements = [part.split("=")[0].strip() for part in program.split(";")]
    run_args = ["run", program]
    inputs = []
    for (name, dtype, shape), spec in zip(operands, specs):
        values = data(rng, dtype, shape)
        inputs.append(np.ascontiguousarray(values))
        np.save(os.path.join(folder, name + ".npy"), values)
        run_args += ["-i", spec + "=" + os.path.join(folder, name + ".npy")]
    run_args += flags
    for st in statements:
        run_args += ["-o", "%s=%s" % (st, os.path.join(folder, st + ".jit.npy"))]
    r = bcgen(*run_args)
    if not tap.check(f"{label}: bcgen run (the JIT)", r.returncode == 0, r.stderr):
        continue
    wants = [np.load(os.path.join(folder, st + ".jit.npy")) for st in statements]
    outs = [np.zeros_like(w) for w in wants]
    lib = C.CDLL(library)
    lib.prog.restype = None
    lib.prog(*[C.c_void_p(o.ctypes.data) for o in outs],
             *[C.c_void_p(x.ctypes.data) for x in inputs])
    for st, got, want in zip(statements, outs, wants):
        tap.check(f"{label}: output {st} of the AOT wrapper is the JIT's, bit for bit",
                  got.tobytes() == want.tobytes(),
                  f"got {got.ravel()[:6]}, want {want.ravel()[:6]}")
shutil.rmtree(work)
tap.finish()
