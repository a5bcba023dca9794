#!/usr/bin/python3
"""_make_corpus.py - writes the seed corpora tests/fuzz/corpus/NAME/ for the
libFuzzer harnesses (run by hand, `/usr/bin/python3 tests/fuzz/_make_corpus.py`; the files are
checked in; the leading "_" keeps tests/run.sh from taking it for a test).  Seeds are
small valid inputs of each kind plus a few classic near-misses, so the
fuzzer starts from inputs that reach deep into each parser."""
import io
import os
import random
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

EXPRESSIONS = [
    "a * b + c", "where(a > 0, a, 0.1 * a)", "sqrt(abs(a)) + exp(-a) * tanh(a)",
    "a // b + a % b", "where(a > 1.5, i8(a), u8(b) << 2)", "clip(a, -1, 1) ** 2",
    "minimum(a, b) - maximum(c, d)", "(a < b) && !(c || d)", "~d ^ (b & 7) | 0x10",
    "f64(a) / 3 + 1e-3", "pow(a, 2.5) >= log(b)", "floor(a) + ceil(b) - cos(a) * sin(b)",
    "-(-(-a))", "((((a))))", "a ** b ** 2", "bool(a) + int8(b)", "1 + 2 * 3",
    "a + (b", "a +", "a $ b", "0x", "010", "1e400 + a",
    # issue 13's functions, aliases and literals
    "expit(a) * sign(b) + logaddexp(a, b) - logaddexp2(c, 1.5)",
    "square(a) + reciprocal(b) + round(c) + fix(d) + deg2rad(a) - degrees(b)",
    "logical_xor(a, True) && logical_and(b, False) || logical_not(c) || logical_or(d, a)",
    "sigmoid(a) + atan2(a, b) + around(c) + radians(d)", "sign(True)", "Tru(a)",
    # issue 14's saturating functions
    "add_sat(a, b) - sub_sat(c, 7) + mul_q15(i16(a), i16(b)) * mul_q7(i8(c), -128)",
    "mul_q31(i32(a), 2147483647) + add_sat(u8(b), 255) + mul_q15(-32768, -32768)",
]
SPECS = [
    "a=f32[5,3,4,1]", "b=f32[3,1,1]=ones", "c=f32[]", "x=f64[3,4]@[1,3]", "y=i32[(2,3)]=range",
    "z=u8[2x3x4]=random:7", "s=bool[scalar]", "t=int64[5,]", "w=float32[1,2]=w.npy",
    "q=f32[3]@[-1]", "a=f32[99999999999999999999]", "a=f32[-1]", "a=f32[3", "=f32[3]",
]
TEMPLATES = [
    "{{name}} {{count}}\n", "{{#if flag}}yes{{#elif count}}c{{#else}}no{{/if}}\n",
    "{{#each items}}{{@index}}:{{name}}{{#if @last}}.{{/if}}{{#each inner}}[{{flag}}]{{/each}}{{/each}}\n",
    "{{! comment\n over lines }}x{{{{y\n", "{{#each none}}never{{/each}}\n", "{{#if !flag}}{{/if}}",
    "{{missing}}", "{{#if flag}}unclosed", "{{/each}}", "{{ name }}{{#if ! flag }}a{{/if}}",
]


def write(name, index, data):
    folder = os.path.join(HERE, "corpus", name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "seed-%02d" % index), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def npy_bytes(array, version=None):
    buffer = io.BytesIO()
    if version:
        np.lib.format.write_array(buffer, array, version=version)
    else:
        np.save(buffer, array)
    return buffer.getvalue()


def main():
    for i, e in enumerate(EXPRESSIONS):
        write("expr", i, e)
    write("expr", len(EXPRESSIONS), b"\x93a * b + c")
    for i, s in enumerate(SPECS):
        write("spec", i, s)
    arrays = [
        np.arange(12, dtype=np.float32).reshape(3, 4), np.array(3.5), np.array([True, False]),
        np.arange(6, dtype=">i2").reshape(2, 3), np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3)),
        np.zeros((0, 3), dtype=np.uint8), np.arange(5, dtype=np.float64), np.array([1, 2], dtype=np.uint32),
    ]
    for i, a in enumerate(arrays):
        write("npy", i, npy_bytes(a))
    write("npy", len(arrays), npy_bytes(np.arange(4, dtype=np.int8), version=(2, 0)))
    write("npy", len(arrays) + 1, npy_bytes(np.arange(4, dtype=np.int8))[:-2])  # truncated
    templates = TEMPLATES + [open(os.path.join(HERE, "..", "..", "templates", t)).read()[:4000]
                             for t in ("kernel.c.tmpl", "ops.c.tmpl")]
    for i, t in enumerate(templates):
        write("tmpl", i, t)
    # compile: byte 0 = count-1 | limit << 2 | factor << 4; 2 bytes per operand
    # (dtype index; rank | sizes << 2); then the expression.
    F32, I32, U8, F64, BOOL, I8 = 9, 3, 5, 10, 0, 1
    def shape(*dims):
        r = len(dims)
        for d, n in enumerate(dims):
            r |= n << (2 + 2 * d)
        return r
    compile_seeds = [
        (2, 1, 1, [(F32, shape(3, 2)), (F32, shape(2)), (F32, shape())], "a * b + c"),
        (1, 0, 0, [(I32, shape(3)), (I32, shape(3, 1))], "a // b + a % b"),
        (1, 2, 3, [(U8, shape(2, 2)), (I8, shape(2))], "where(a > b, a << 1, b >> 1)"),
        (0, 1, 0, [(F64, shape(3, 3, 2))], "sqrt(abs(a)) + exp(-a) * tanh(a)"),
        (1, 3, 1, [(BOOL, shape(2)), (F32, shape(1, 2))], "where(a, b, -b) ** 2"),
        (2, 0, 2, [(I8, shape(3)), (U8, shape(3)), (F32, shape())], "clip(a, b, 3) + f32(c)"),
        (0, 1, 0, [(F32, shape(0, 3))], "a + 1"),
    ]
    for i, (count_minus_one, limit, factor, ops, expr) in enumerate(compile_seeds):
        data = bytes([count_minus_one | limit << 2 | factor << 4])
        for dtype, r in ops:
            data += bytes([dtype, r])
        write("compile", i, data + expr.encode())
    # Extended inputs (bit 6): a stride byte per operand (2 bits a dimension:
    # the C-contiguous stride times 1, -1, 0, 2) and a run byte (in place into
    # operand value - 1; 4: two threads; 8: no microkernels).  Long sizes (bit
    # 7) are 1, 3, 67, 1024 for the codes 0..3: inner runs for the
    # microkernels, outputs big enough for two threads.
    KEEP, REVERSE, ZERO, GAP = 0, 1, 2, 3
    def strides(*codes):
        return sum(c << (2 * d) for d, c in enumerate(codes))
    I16, U16, I64, U64 = 2, 6, 4, 8
    THREADS, PLAIN = 4, 8
    extended_seeds = [
        (True, 1, 0, [(F32, shape(3, 2), 0), (F32, shape(2), 0)], THREADS, "a * b + 1"),
        (True, 1, 3, [(I32, shape(3, 2), strides(REVERSE, KEEP)), (I32, shape(2), 0)],
         1 | THREADS, "a + b * 3"),
        (True, 0, 1, [(F32, shape(1, 3), 0)], 0, "exp(a)"),
        (True, 1, 0, [(F32, shape(1, 3), strides(KEEP, GAP)), (F32, shape(3), 0)], 0,
         "tanh(a) * 2 + sin(b)"),
        (False, 1, 1, [(I16, shape(3, 2), strides(ZERO, REVERSE)), (I16, shape(2), 0)], 0,
         "a - b"),
        (True, 0, 2, [(F64, shape(3, 2), strides(REVERSE, GAP))], PLAIN, "sqrt(a) / 3"),
        (True, 2, 0, [(U8, shape(3, 2), 0), (U8, shape(2), strides(REVERSE)), (I64, shape(), 0)],
         1 | THREADS, "a << 2 | b"),
        (False, 2, 3, [(F32, shape(3, 3), strides(GAP, KEEP)), (F32, shape(3), strides(REVERSE)),
                       (F32, shape(), 0)], 1, "a * c + log(abs(b) + 1)"),
        (True, 1, 0, [(U16, shape(2, 3), strides(REVERSE, REVERSE)), (U64, shape(3), 0)],
         THREADS, "where(a > 3, b // 3, u64(a) % 7)"),
    ]
    for i, (long_sizes, count_minus_one, factor, ops, run, expr) in enumerate(extended_seeds):
        data = bytes([count_minus_one | 1 << 2 | factor << 4 | 0x40 | (0x80 if long_sizes else 0)])
        for dtype, r, _ in ops:
            data += bytes([dtype, r])
        data += bytes([code for _, _, code in ops]) + bytes([run])
        write("compile", len(compile_seeds) + i, data + expr.encode())

    # aot: byte 0 = kernels-1 | restrict << 2 | index64 << 3; per kernel a flags
    # byte (operands-1 | in place (operand + 1) << 2 | unroll << 4 | math
    # double << 6 | long sizes << 7) and 3 bytes per operand (dtype; rank |
    # size codes << 2; stride codes), then '\n'-separated texts: per kernel
    # name, expression, operand names; then command, .c name, .h name.
    FULL, NONE, FACTOR2 = 1, 2, 3
    def kernel(ops, inplace=0, unroll=0, math_double=False, long_sizes=False):
        flags = (len(ops) - 1) | inplace << 2 | unroll << 4 | math_double << 6 | long_sizes << 7
        return bytes([flags]) + b"".join(bytes([t, r, code]) for t, r, code in ops)
    aot_seeds = [
        (0, [kernel([(F32, shape(3, 2), 0), (F32, shape(2), 0), (F32, shape(), 0)])],
         ["scale", "x * gain + bias", "x", "gain", "bias", "bcgen aot -k scale=...", "k.c", "k.h"]),
        (1 | 4, [kernel([(I32, shape(3), 0), (I16, shape(3), 0)], inplace=1),
                 kernel([(I16, shape(2, 3), strides(REVERSE, GAP))], unroll=NONE)],
         ["accumulate", "acc + y", "acc", "y", "clamp", "u8(clip(p, 10, 200))", "p",
          "cmd */ int evil; /*", "out/kernels.c", "out/kernels.h"]),
        (2 | 8, [kernel([(F32, shape(3, 3), 0)], math_double=True, unroll=FULL),
                 kernel([(F64, shape(3, 3), strides(ZERO, KEEP)), (U8, shape(0), 0)],
                        long_sizes=True),
                 kernel([(BOOL, shape(2), 0), (I64, shape(2), 0), (U64, shape(), 0)],
                        unroll=FACTOR2)],
         ["m", "exp(a) + sqrt(abs(a)) * tanh(a)", "a", "big", "p // 3 + q ** 2", "p", "q",
          "sel", "where(c, x, y >> 1)", "c", "x", "y", "", "k.c", "gen/k-2.h"]),
        (0, [kernel([(F32, shape(2), 0)])], ["int", "a + 1", "a"]),
        (0, [kernel([(F32, shape(2), 0)])], ["k", "out + 1", "out"]),
        (0, [kernel([(F32, shape(2), 0)])], ["k", "a", "a", "", "k.c", "weird \"name*/.h"]),
        (0, [kernel([(I8, shape(3, 3), 0)], long_sizes=True)], ["huge", "a * 2", "a"]),
    ]
    for i, (head, kernels, texts) in enumerate(aot_seeds):
        write("aot", i, bytes([head]) + b"".join(kernels) + "\n".join(texts).encode())

    write_jit_diff()


def write_jit_diff():
    """jit_diff: every byte is a choice of fuzz_jit_diff.c's generator, so any
    bytes are a valid input; the seeds are random bytes from a fixed seed,
    short and long, plus all-zero input (one bool operand, `a`)."""
    rng = random.Random(9)
    write("jit_diff", 0, bytes(8))
    for i in range(1, 16):
        write("jit_diff", i, bytes(rng.randrange(256) for _ in range(24 + 25 * i)))


if __name__ == "__main__":
    if os.environ.get("ONLY") == "jit_diff":
        write_jit_diff()
    else:
        main()
