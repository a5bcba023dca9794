#!/usr/bin/env python3
"""Emitted AOT kernels compute on 32-bit ARM what bcgen's reference
evaluator computes on the host.

For each pair (fully unrolled, plain loops, grouped loops, and one with
--math double, --restrict and an in-place kernel) the test generates a
harness from the kernels' descriptions (no per-kernel C is written by
hand): it reads each operand from a raw little-endian file, calls the
kernel with buffers sized by the header's _BYTES macros and writes the
output.  The harness and the pair are built with arm-linux-gnueabihf-gcc
-static (a 32-bit long and ptrdiff_t) and run under qemu-arm.  The inputs
come from NumPy on the host and the expected outputs from
`bcgen run --reference` on the same .npy files.

Integers and bools must match bit for bit.  Floats: NaN where the reference
has NaN, and |got - want| <= FLOAT_TOLERANCE[dtype] * max(1, |want|), which
allows the last-bit differences of a different libm (or of --math double)
carried through the sums of the test expressions; +-inf must match exactly.

f32 `**` under --math float (the default) is powf, where the reference (and
the JIT) compute pow in double and round once.  glibc's powf, which the
ARM harness links, is within 1 ulp, so the kernel pow_f32 (a ** b alone)
must be within KERNEL_TOLERANCE: 2.5e-7 relative (2 ulp of f32) of the
reference; in the sums of the other kernels the 1e-5 above covers it.
"""
import os
import shutil
import subprocess
import tempfile

import numpy as np

from _aot import DTYPES, UNROLL_MODES, Tap, bcgen, kernels_for, missing_tools

FLOAT_TOLERANCE = {"f32": 1e-5, "f64": 1e-12, "f16": 2e-2, "bf16": 1.6e-1}
KERNEL_TOLERANCE = {"pow_f32": 2.5e-7, "arith_f16": 0.0, "arith_bf16": 0.0, "mixed_f16": 0.0}
NUMPY = {"bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32,
         "i64": np.int64, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32,
         "u64": np.uint64, "f32": np.float32, "f64": np.float64, "f16": np.float16,
         "bf16": np.uint16}   # bf16: its bits (NumPy has no bfloat16)
CTYPE = {"bool": "uint8_t", "i8": "int8_t", "i16": "int16_t", "i32": "int32_t",
         "i64": "int64_t", "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t",
         "u64": "uint64_t", "f32": "float", "f64": "double", "f16": "uint16_t",
         "bf16": "uint16_t"}


def bf16_bits(x):
    """float32 values rounded to bfloat16 (to nearest even, NaN kept), as bits."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, np.float32))
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded).astype(np.uint16)


def as_float(values, dtype):
    """An output as floats: bf16 bits ('V2' or uint16) widened to float32."""
    if dtype == "bf16":
        bits = np.ascontiguousarray(values).view(np.uint16).astype(np.uint32)
        return (bits << 16).view(np.float32)
    return values

tap = Tap()
CC = ["arm-linux-gnueabihf-gcc", "-static", "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror"]
absent = missing_tools([CC, ["qemu-arm"]])
if absent:
    tap.skip("the emulated 32-bit ARM run", ", ".join(absent) + " not installed "
             "(make aot-deps, run by make test as root, installs gcc-arm-linux-gnueabihf and qemu-user)")
    tap.finish()

rng = np.random.default_rng(20240607)


def parse_operand(spec):
    name, rest = spec.split("=", 1)
    dtype, shape = rest.split("[", 1)
    shape = shape.rstrip("]")
    dims = tuple(int(d) for d in shape.split(",")) if shape else ()
    return name, dtype, dims


def make_input(dtype, dims):
    """Values that reach the interesting cases: full-range integers mixed
    with small ones (so division by zero, -1 and shifts happen), floats with
    zeros, negatives, infinities and NaN."""
    count = int(np.prod(dims)) if dims else 1
    if dtype == "bool":
        values = rng.integers(0, 2, count).astype(np.bool_)
    elif dtype in ("f32", "f64", "f16", "bf16"):
        # mostly positive, so that sqrt and log in the test expressions leave
        # most elements finite
        values = np.abs(rng.standard_normal(count) * 4) + 0.125
        values = np.where(rng.random(count) < 0.2, -values, values)
        specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.5])
        picks = rng.random(count) < 0.05
        values[picks] = rng.choice(specials, int(picks.sum()))
        values = bf16_bits(values) if dtype == "bf16" else values.astype(NUMPY[dtype])
    else:
        info = np.iinfo(NUMPY[dtype])
        wide = rng.integers(int(info.min), int(info.max), count, endpoint=True,
                            dtype=np.int64 if dtype != "u64" else np.uint64)
        small = rng.integers(max(int(info.min), -5), 6, count)
        values = np.where(rng.random(count) < 0.5, small, wide).astype(NUMPY[dtype])
    return values.reshape(dims)


def harness_source(header, kernels):
    """main() that runs every kernel of the pair on the files in argv[1]."""
    lines = ["#include <stdio.h>", "#include <stdlib.h>", "#include <stdint.h>",
             f'#include "{header}"', "",
             "static void *load(const char *dir, const char *file, size_t bytes)", "{",
             "    char path[512];", "    unsigned char *p = malloc(bytes + 16);",
             "    FILE *f;", '    snprintf(path, sizeof path, "%s/%s", dir, file);',
             '    f = fopen(path, "rb");',
             "    if (!p || !f || fread(p, 1, bytes, f) != bytes) {",
             '        fprintf(stderr, "cannot read %s\\n", path);', "        exit(2);", "    }",
             "    fclose(f);", "    return p;", "}", "",
             "static void save(const char *dir, const char *file, const void *p, size_t bytes)",
             "{", "    char path[512];", "    FILE *f;",
             '    snprintf(path, sizeof path, "%s/%s", dir, file);',
             '    f = fopen(path, "wb");',
             "    if (!f || fwrite(p, 1, bytes, f) != bytes || fclose(f) != 0) {",
             '        fprintf(stderr, "cannot write %s\\n", path);', "        exit(2);", "    }",
             "}", "", "int main(int argc, char **argv)", "{",
             "    const char *dir = argc > 1 ? argv[1] : \".\";"]
    for k in kernels:
        upper = k["name"].upper()
        lines.append("    {")
        args = []
        if k["inplace"] is None:
            lines.append(f"        {CTYPE[k['out_dtype']]} *out = malloc({upper}_OUT_BYTES + 16);")
            args.append("out")
        for name, dtype, _ in k["operands"]:
            lines.append(f"        {CTYPE[dtype]} *{name} = load(dir, \"{k['name']}.{name}.bin\", "
                         f"{upper}_{name.upper()}_BYTES);")
            args.append(name)
        # rank-0 operands are passed by value (the in-place target stays a pointer)
        call = [f"*{name}" if dims == () and name != k["inplace"] else name
                for name, _, dims in k["operands"]]
        lines.append(f"        {k['name']}({', '.join(args[:len(args) - len(call)] + call)});")
        result = "out" if k["inplace"] is None else k["inplace"]
        lines.append(f"        save(dir, \"{k['name']}.out.bin\", {result}, {upper}_OUT_BYTES);")
        for a in args:
            lines.append(f"        free({a});")
        lines.append("    }")
    lines += ["    return 0;", "}", ""]
    return "\n".join(lines)


def run_pair(label, kernels, options, cc=CC):
    work = tempfile.mkdtemp(prefix=f"bcgen-aot-qemu-{label}-")
    args = ["aot"]
    for k in kernels:
        args += ["-k", f"{k['name']}={k['expr']}"]
        args += sum((["-i", spec] for spec in k["specs"]), [])
        if k["inplace"]:
            args += ["--inplace", k["inplace"]]
        args += k["flags"]
    args += ["-o", os.path.join(work, "pair.c")] + options
    r = bcgen(*args)
    if not tap.check(f"{label}: bcgen aot writes the pair", r.returncode == 0, r.stderr):
        return

    # inputs (raw for the harness, .npy for the reference) and the references
    expected = {}
    for k in kernels:
        run_args = ["run", k["expr"]]
        for (name, dtype, dims), spec in zip(k["operands"], k["specs"]):
            values = make_input(dtype, dims)
            values.astype(values.dtype.newbyteorder("<")).tofile(
                os.path.join(work, f"{k['name']}.{name}.bin"))
            npy = os.path.join(work, f"{k['name']}.{name}.npy")
            # bf16 as raw 2-byte records, as np.save writes ml_dtypes' bfloat16
            np.save(npy, values.view("V2") if dtype == "bf16" else values)
            run_args += ["-i", f"{spec}={npy}"]
        reference = os.path.join(work, f"{k['name']}.reference.npy")
        if k["inplace"]:
            run_args += ["--inplace", k["inplace"]]
        run_args += k["flags"]
        r = bcgen(*(run_args + ["--reference", "-o", reference]))
        if tap.check(f"{label}: bcgen run --reference for {k['name']}", r.returncode == 0,
                     r.stderr):
            expected[k["name"]] = np.load(reference)

    with open(os.path.join(work, "harness.c"), "w") as f:
        f.write(harness_source("pair.h", kernels))
    binary = os.path.join(work, "harness")
    r = subprocess.run(cc + ["-I", work, os.path.join(work, "harness.c"),
                             os.path.join(work, "pair.c"), "-o", binary, "-lm"],
                       capture_output=True, text=True)
    if not tap.check(f"{label}: the generated harness builds for 32-bit ARM", r.returncode == 0,
                     r.stderr):
        return
    r = subprocess.run(["qemu-arm", binary, work], capture_output=True, text=True, timeout=120)
    if not tap.check(f"{label}: the harness runs under qemu-arm", r.returncode == 0, r.stderr):
        return

    for k in kernels:
        if k["name"] not in expected:
            continue
        want = expected[k["name"]]
        got = np.fromfile(os.path.join(work, f"{k['name']}.out.bin"),
                          dtype=np.dtype(want.dtype).newbyteorder("<")).reshape(want.shape)
        dtype = k["out_dtype"]
        got, want = as_float(got, dtype), as_float(want, dtype)
        if dtype in FLOAT_TOLERANCE:
            tolerance = KERNEL_TOLERANCE.get(k["name"], FLOAT_TOLERANCE[dtype])
            same_nan = np.array_equal(np.isnan(got), np.isnan(want))
            finite = np.isfinite(want)
            same_inf = np.array_equal(got[np.isinf(want)], want[np.isinf(want)])
            error = np.abs(got[finite].astype(np.float64) - want[finite].astype(np.float64))
            bound = tolerance * np.maximum(1.0, np.abs(want[finite]))
            ok = same_nan and same_inf and bool(np.all(error <= bound)) and np.all(
                np.isfinite(got[finite]))
            detail = f"largest error {error.max() if error.size else 0}, nan {same_nan}, inf {same_inf}"
            what = f"within {tolerance:g}"
        else:
            ok = np.array_equal(np.ascontiguousarray(got).reshape(-1).view(np.uint8),
                                np.ascontiguousarray(want).reshape(-1).view(np.uint8))
            bad = np.flatnonzero(got.ravel() != want.ravel())[:5]
            detail = f"first differences at {bad}: got {got.ravel()[bad]}, want {want.ravel()[bad]}"
            what = "bit for bit"
        tap.check(f"{label}: {k['name']} on ARM matches the reference {what}", ok, detail)
    shutil.rmtree(work)


def describe(name, expr, specs, inplace=None, flags=()):
    """A kernel; FLAGS are its output options (--reduce, --out-dtype ...),
    given to both bcgen aot and bcgen run --reference."""
    operands = [parse_operand(s) for s in specs]
    if inplace:
        out_dtype = next(d for n, d, _ in operands if n == inplace)
    else:
        r = bcgen("explain", expr, *sum((["-i", s] for s in specs), []), *flags, "--json")
        import json
        out_dtype = json.loads(r.stdout)["output"]["dtype"] if r.returncode == 0 else "?"
    return {"name": name, "expr": expr, "specs": specs, "operands": operands,
            "inplace": inplace, "out_dtype": out_dtype, "flags": list(flags)}


for mode, (options, rows, columns) in UNROLL_MODES.items():
    kernels = [describe(n, e, s) for dtype in DTYPES for n, e, s in kernels_for(dtype, rows, columns)]
    run_pair(mode, kernels, options)

extra = [
    describe("soft_f32", "tanh(x) * sqrt(abs(y)) + exp(-x * x) - log(abs(y) + 1) + sin(x) * cos(y)",
             ["x=f32[4,33]", "y=f32[33]"]),
    describe("accumulate", "acc + gain * x", ["acc=i32[7,9]", "gain=i32[]", "x=i32[9]"],
             inplace="acc"),
    describe("scale_u8", "u8(clip(f32(p) * 1.7, 0, 255))", ["p=u8[5,17]"]),
]
run_pair("double-restrict-inplace", extra, ["--math", "double", "--restrict", "--unroll", "4"])
run_pair("float-pow", [describe("pow_f32", "a ** b", ["a=f32[16,33]", "b=f32[33]"])],
         ["--math", "float"])
# f16 and bf16 without libm: bit for bit (tolerance 0), once through the
# portable conversions and once through the compiler's __fp16/_Float16
# (-mfp16-format=ieee), which must give the same bits
half = [
    describe("arith_f16", "a * b + c - a / (b + 1) + minimum(a, c) * 0.1", ["a=f16[7,33]", "b=f16[33]", "c=f16[7,1]"]),
    describe("arith_bf16", "a * b + c - a / (b + 1) + maximum(a, c) * 0.1", ["a=bf16[7,33]", "b=bf16[33]", "c=bf16[7,1]"]),
    describe("mixed_f16", "f16(x * 3 + 0.5) + f16(d) + i", ["x=f32[5,9]", "d=f64[9]", "i=i8[5,1]"]),
]
run_pair("half-portable", half, ["--unroll", "none"])
run_pair("half-native", half, ["--unroll", "none"], cc=CC + ["-mfp16-format=ieee"])
# output dtypes and reductions (issue 12): the gradient of a broadcast, a
# compensated f64 mean, integer sums in i64 cast to i32, any, a cast on store
reductions = [
    describe("grad_b", "g * a", ["g=f32[9,17]", "a=f32[17]"], flags=["--reduce", "sum", "--to", "a"]),
    describe("mean_rows", "x - 1", ["x=f64[6,40]"], flags=["--reduce", "mean", "--out-shape", "6,1"]),
    describe("sum_i8", "v * 3", ["v=i8[5,7,3]"],
             flags=["--reduce", "sum", "--out-shape", "7,1", "--out-dtype", "i32"]),
    describe("any_pos", "w > 0", ["w=i16[4,9]"], flags=["--reduce", "any", "--out-shape", "1,9"]),
    describe("max_u16", "maximum(p, q)", ["p=u16[8,5]", "q=u16[5]"],
             flags=["--reduce", "max", "--out-shape", "[]"]),
    describe("widen", "h + h", ["h=f32[3,11]"], flags=["--out-dtype", "f64"]),
]
run_pair("reductions", reductions, ["--unroll", "none"])


def run_program(label, name, program, specs, outputs, flags, options):
    """A program of several outputs (issue 12 part 3): the pair's wrapper
    NAME(out1, out2, ..., operands) on ARM against bcgen run --reference
    of the same program.  OUTPUTS: [(statement, dtype)]."""
    work = tempfile.mkdtemp(prefix=f"bcgen-aot-qemu-{label}-")
    operands = [parse_operand(s) for s in specs]
    r = bcgen("aot", "-k", f"{name}={program}", *sum((["-i", s] for s in specs), []), *flags,
              "-o", os.path.join(work, "pair.c"), *options)
    if not tap.check(f"{label}: bcgen aot writes the pair of program {name}", r.returncode == 0,
                     r.stderr):
        return
    run_args = ["run", program]
    for (op, dtype, dims), spec in zip(operands, specs):
        values = make_input(dtype, dims)
        values.astype(values.dtype.newbyteorder("<")).tofile(os.path.join(work, f"{op}.bin"))
        npy = os.path.join(work, f"{op}.npy")
        np.save(npy, values)
        run_args += ["-i", f"{spec}={npy}"]
    run_args += flags + ["--reference"]
    for statement, _ in outputs:
        run_args += ["-o", f"{statement}={os.path.join(work, statement + '.reference.npy')}"]
    r = bcgen(*run_args)
    if not tap.check(f"{label}: bcgen run --reference of program {name}", r.returncode == 0,
                     r.stderr):
        return
    lines = harness_source("pair.h", []).split("\n")
    end = lines.index("    return 0;")
    body = ["    {"]
    for op, dtype, dims in operands:
        body.append(f"        {CTYPE[dtype]} *{op} = load(dir, \"{op}.bin\", "
                    f"{name.upper()}_{outputs[0][0].upper()}_{op.upper()}_BYTES);")
    for statement, dtype in outputs:
        body.append(f"        {CTYPE[dtype]} *{statement} = malloc("
                    f"{name.upper()}_{statement.upper()}_OUT_BYTES + 16);")
    call = [st for st, _ in outputs] + [f"*{op}" if dims == () else op for op, _, dims in operands]
    body.append(f"        {name}({', '.join(call)});")
    for statement, _ in outputs:
        body.append(f"        save(dir, \"{statement}.out.bin\", {statement}, "
                    f"{name.upper()}_{statement.upper()}_OUT_BYTES);")
    body.append("    }")
    with open(os.path.join(work, "harness.c"), "w") as f:
        f.write("\n".join(lines[:end] + body + lines[end:]))
    binary = os.path.join(work, "harness")
    r = subprocess.run(CC + ["-I", work, os.path.join(work, "harness.c"),
                             os.path.join(work, "pair.c"), "-o", binary, "-lm"],
                       capture_output=True, text=True)
    if not tap.check(f"{label}: the program's harness builds for 32-bit ARM", r.returncode == 0,
                     r.stderr):
        return
    r = subprocess.run(["qemu-arm", binary, work], capture_output=True, text=True, timeout=120)
    if not tap.check(f"{label}: the program's harness runs under qemu-arm", r.returncode == 0,
                     r.stderr):
        return
    for statement, dtype in outputs:
        want = np.load(os.path.join(work, statement + ".reference.npy"))
        got = np.fromfile(os.path.join(work, f"{statement}.out.bin"),
                          dtype=np.dtype(want.dtype).newbyteorder("<")).reshape(want.shape)
        if dtype in FLOAT_TOLERANCE:
            ok = np.allclose(got, want, rtol=FLOAT_TOLERANCE[dtype], atol=0, equal_nan=True)
        else:
            ok = np.array_equal(got, want)
        tap.check(f"{label}: output {statement} of {name} on ARM matches the reference", bool(ok),
                  f"got {got.ravel()[:6]}, want {want.ravel()[:6]}")
    shutil.rmtree(work)


# forward and gradient in one call: y = g * a, s = y summed to a's shape,
# u = y cast to f64 plus a scalar, m = the i16 maximum of two operands
run_program("program", "fwd", "y = g * a; s = y; u = y + c; m = maximum(p, q)",
            ["g=f32[9,17]", "a=f32[17]", "c=f32[]", "p=i16[9,1]", "q=i16[17]"],
            [("y", "f32"), ("s", "f32"), ("u", "f64"), ("m", "i16")],
            ["--reduce", "s=sum", "--to", "s=a", "--out-dtype", "u=f64"], ["--unroll", "none"])
# a backward pass fused into one function: two gradients reduced over the
# rows (a sum and a mean, each its own accumulator) and dx element-wise
run_program("program-reductions", "bwd", "dw = dy * x; db = dy; dx = dy * w",
            ["dy=f32[9,17]", "x=f32[9,17]", "w=f32[1,17]"],
            [("dw", "f32"), ("db", "f32"), ("dx", "f32")],
            ["--reduce", "dw=sum", "--out-shape", "dw=[1,17]", "--reduce", "db=mean",
             "--out-shape", "db=[17]"], ["--unroll", "none"])
tap.finish()
