#!/usr/bin/python3
"""program.py - `make bench-program`: a program of several outputs, fused
into one kernel against the same program run statement by statement and
against NumPy, in one process (libbcgen.so through ctypes), interleaved,
best of N.

The case is forward + gradient (issue 12 part 3): over g, a of f32[N,N]

    y = g * a; s = y        s reduced by sum to b's shape (1, N)

  bcgen fused     one kernel: y stored and s accumulated in one pass
  bcgen separate  separate_statements: two kernels, g and a read twice
  numpy reuse     y = np.multiply(g, a, out=y); s = y.sum(axis=0, keepdims=True)
  numpy twice     np.multiply(g, a, out=y); (g * a).sum(axis=0, keepdims=True)

and the backward pass of z = x * w + b, w and b of shape (1, N): two
gradients summed over the rows and one element-wise, in one program

    dw = dy * x; db = dy; dx = dy * w      dw, db reduced by sum to (1, N)

Every result is checked once (bcgen's fused and separate outputs bit for
bit, NumPy's y exactly and s within float rounding) before timing.  One
thread unless --threads.  Benchmarks are not tests: make test does not run
this.

  program.py [--lib build/libbcgen.so] [--size 4096] [--repeat 15] [--threads 1]
"""
import argparse
import ctypes as C
import os
import time

import numpy as np

I64P = C.POINTER(C.c_int64)


class Operand(C.Structure):
    _fields_ = [("name", C.c_char_p), ("dtype", C.c_int), ("rank", C.c_int),
                ("shape", I64P), ("strides", I64P)]


class Output(C.Structure):
    _fields_ = [("dtype", C.c_int), ("rank", C.c_int), ("strides", I64P), ("reduce", C.c_int),
                ("shape", I64P)]


class Options(C.Structure):
    _fields_ = [(n, C.c_int) for n in ("inplace", "axis", "strict_rank", "warn_legacy",
                                       "unroll_limit", "unroll_factor", "microkernel_run",
                                       "backend", "native", "stream_stores")] + [
        ("output", C.POINTER(Output)), ("outputs", C.POINTER(Output)), ("output_count", C.c_int),
        ("output_names", C.POINTER(C.c_char_p)), ("separate_statements", C.c_int)]


class Error(C.Structure):
    _fields_ = [("status", C.c_int), ("column", C.c_int), ("operand", C.c_int),
                ("dimension", C.c_int), ("message", C.c_char * 512)]


F32, SUM = 9, 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=os.path.join(os.environ.get("BUILD", "build"), "libbcgen.so"))
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    opts = ap.parse_args()
    lib = C.CDLL(os.path.abspath(opts.lib))
    lib.bcg_context_new.restype = C.c_void_p
    lib.bcg_compile_program.argtypes = [C.c_void_p, C.c_char_p, C.POINTER(Operand), C.c_int,
                                        C.POINTER(Options), C.POINTER(C.c_void_p), C.POINTER(Error)]
    lib.bcg_run_outputs.argtypes = [C.c_void_p, C.POINTER(C.c_void_p), C.POINTER(C.c_void_p),
                                    C.c_int, C.POINTER(Error)]
    lib.bcg_program_fused.argtypes = [C.c_void_p]
    lib.bcg_program_fused.restype = C.c_void_p
    lib.bcg_options_init.argtypes = [C.POINTER(Options)]

    n = opts.size
    rng = np.random.default_rng(1)
    g = rng.uniform(-2, 2, (n, n)).astype(np.float32)
    a = rng.uniform(-2, 2, (n, n)).astype(np.float32)
    shape, target = (C.c_int64 * 2)(n, n), (C.c_int64 * 2)(1, n)
    ops = (Operand * 3)(Operand(b"g", F32, 2, shape, None), Operand(b"a", F32, 2, shape, None),
                        Operand(b"b", F32, 2, target, None))
    outs = (Output * 2)(Output(-1, 0, None, 0, None), Output(-1, 2, None, SUM, target))
    ctx = lib.bcg_context_new()
    programs = {}
    for label, separate in (("bcgen fused", 0), ("bcgen separate", 1)):
        options = Options()
        lib.bcg_options_init(C.byref(options))
        options.outputs, options.output_count = outs, 2
        options.separate_statements = separate
        prog, err = C.c_void_p(), Error()
        if lib.bcg_compile_program(ctx, b"y = g * a; s = y", ops, 3, C.byref(options),
                                   C.byref(prog), C.byref(err)):
            raise SystemExit("compile: " + err.message.decode())
        if bool(lib.bcg_program_fused(prog)) != (not separate):
            raise SystemExit("%s: the program is %sfused" % (label, "" if separate else "not "))
        programs[label] = prog
    inputs = (C.c_void_p * 3)(g.ctypes.data, a.ctypes.data, None)
    results = {}

    def bcgen(label):
        y = results.setdefault(label + " y", np.empty((n, n), np.float32))
        s = results.setdefault(label + " s", np.empty((1, n), np.float32))
        pointers = (C.c_void_p * 2)(y.ctypes.data, s.ctypes.data)
        err = Error()
        if lib.bcg_run_outputs(programs[label], pointers, inputs, opts.threads, C.byref(err)):
            raise SystemExit("run: " + err.message.decode())

    y_np = np.empty((n, n), np.float32)

    def numpy_reuse():
        np.multiply(g, a, out=y_np)
        return y_np.sum(axis=0, keepdims=True)

    def numpy_twice():
        np.multiply(g, a, out=y_np)
        return (g * a).sum(axis=0, keepdims=True)

    runs = {"bcgen fused": lambda: bcgen("bcgen fused"),
            "bcgen separate": lambda: bcgen("bcgen separate"),
            "numpy reuse": numpy_reuse, "numpy twice": numpy_twice}
    for run in runs.values():
        run()
    # checks: fused == separate bit for bit; NumPy's y exactly, its s closely
    for part in ("y", "s"):
        if results["bcgen fused " + part].tobytes() != results["bcgen separate " + part].tobytes():
            raise SystemExit("fused and separate %s differ" % part)
    assert np.array_equal(results["bcgen fused y"], g * a)
    want = (g.astype(np.float64) * a).sum(axis=0, keepdims=True)
    assert np.allclose(results["bcgen fused s"], want, rtol=1e-5, atol=1e-3)
    best = {label: float("inf") for label in runs}
    for _ in range(opts.repeat):  # interleaved: each round times every run once
        for label, run in runs.items():
            start = time.perf_counter()
            run()
            best[label] = min(best[label], time.perf_counter() - start)
    moved = 3 * n * n * 4 + n * 4  # g, a read and y written once, s written
    print("forward + gradient, f32[%d,%d], %d thread%s, best of %d (interleaved):"
          % (n, n, opts.threads, "" if opts.threads == 1 else "s", opts.repeat))
    for label, t in best.items():
        print("  %-15s %8.2f ms  %6.1f GB/s (of the fused pass's bytes)  numpy reuse / this %.2fx"
              % (label, t * 1e3, moved / t / 1e9, best["numpy reuse"] / t))
    backward(lib, ctx, n, opts)


def backward(lib, ctx, n, opts):
    """The backward pass of z = x * w + b (w, b of shape (1, N)): two
    gradients reduced over the rows and one element-wise, one program."""
    rng = np.random.default_rng(2)
    dy = rng.uniform(-2, 2, (n, n)).astype(np.float32)
    x = rng.uniform(-2, 2, (n, n)).astype(np.float32)
    w = rng.uniform(-2, 2, (1, n)).astype(np.float32)
    shape, row = (C.c_int64 * 2)(n, n), (C.c_int64 * 2)(1, n)
    ops = (Operand * 3)(Operand(b"dy", F32, 2, shape, None), Operand(b"x", F32, 2, shape, None),
                        Operand(b"w", F32, 2, row, None))
    outs = (Output * 3)(Output(-1, 2, None, SUM, row), Output(-1, 2, None, SUM, row),
                        Output(-1, 0, None, 0, None))
    text = b"dw = dy * x; db = dy; dx = dy * w"
    programs = {}
    for label, separate in (("bcgen fused", 0), ("bcgen separate", 1)):
        options = Options()
        lib.bcg_options_init(C.byref(options))
        options.outputs, options.output_count = outs, 3
        options.separate_statements = separate
        prog, err = C.c_void_p(), Error()
        if lib.bcg_compile_program(ctx, text, ops, 3, C.byref(options), C.byref(prog),
                                   C.byref(err)):
            raise SystemExit("compile: " + err.message.decode())
        if bool(lib.bcg_program_fused(prog)) != (not separate):
            raise SystemExit("%s: the backward program is %sfused" % (label, "" if separate else "not "))
        programs[label] = prog
    inputs = (C.c_void_p * 3)(dy.ctypes.data, x.ctypes.data, w.ctypes.data)
    results = {}

    def bcgen(label):
        got = [results.setdefault(label + k, np.empty(s, np.float32))
               for k, s in (("dw", (1, n)), ("db", (1, n)), ("dx", (n, n)))]
        pointers = (C.c_void_p * 3)(*[v.ctypes.data for v in got])
        err = Error()
        if lib.bcg_run_outputs(programs[label], pointers, inputs, opts.threads, C.byref(err)):
            raise SystemExit("run: " + err.message.decode())

    dx_np = np.empty((n, n), np.float32)

    def numpy():
        np.multiply(dy, w, out=dx_np)
        return (dy * x).sum(axis=0, keepdims=True), dy.sum(axis=0, keepdims=True)

    runs = {"bcgen fused": lambda: bcgen("bcgen fused"),
            "bcgen separate": lambda: bcgen("bcgen separate"), "numpy": numpy}
    for run in runs.values():
        run()
    for part in ("dw", "db", "dx"):
        if results["bcgen fused" + part].tobytes() != results["bcgen separate" + part].tobytes():
            raise SystemExit("backward: fused and separate %s differ" % part)
    assert np.array_equal(results["bcgen fuseddx"], dy * w)
    best = {label: float("inf") for label in runs}
    for _ in range(opts.repeat):
        for label, run in runs.items():
            start = time.perf_counter()
            run()
            best[label] = min(best[label], time.perf_counter() - start)
    print("backward (dw = sum(dy * x), db = sum(dy) over rows, dx = dy * w), f32[%d,%d], "
          "%d thread%s, best of %d (interleaved):"
          % (n, n, opts.threads, "" if opts.threads == 1 else "s", opts.repeat))
    for label, t in best.items():
        print("  %-15s %8.2f ms  numpy / this %.2fx" % (label, t * 1e3, best["numpy"] / t))


if __name__ == "__main__":
    main()
