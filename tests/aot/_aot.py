"""Shared pieces of the ahead-of-time tests (tests/aot/): TAP output, the
kernels the tests generate, and the cross toolchains they need.

The cross tools come from Debian (mk/aot.mk installs them): gcc-arm-none-eabi
and libnewlib-arm-none-eabi, gcc-riscv64-unknown-elf and picolibc, and for the
emulated run gcc-arm-linux-gnueabihf and qemu-user.  When one is missing the
tests that need it print a loud "# SKIP" line (and fail instead when
BCGEN_REQUIRE_CROSS=1), never a silent pass.
"""
import os
import shutil
import subprocess
import sys

BUILD = os.environ.get("BUILD", "build")
BCGEN = os.path.abspath(os.path.join(BUILD, "bcgen"))

DTYPES = ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "f16", "bf16"]
FLOAT_DTYPES = ("f32", "f64", "f16", "bf16")
INTEGER_DTYPES = DTYPES[:9]

# The strict flags of the issue, for every compiler.
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O2"]

# name -> (compiler argv prefix, description).  -c only: nothing is linked.
CROSS = {
    "cortex-m4": ["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-ffreestanding"],
    "cortex-m4f": ["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard",
                   "-mfpu=fpv4-sp-d16", "-ffreestanding"],
    # with IEEE __fp16 and _Float16: the f16 helpers take the native path
    "cortex-m4f-fp16": ["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard",
                        "-mfpu=fpv4-sp-d16", "-mfp16-format=ieee", "-ffreestanding"],
    "rv32imac": ["riscv64-unknown-elf-gcc", "--specs=picolibc.specs", "-march=rv32imac",
                 "-mabi=ilp32", "-ffreestanding"],
    "rv64imac": ["riscv64-unknown-elf-gcc", "--specs=picolibc.specs", "-march=rv64imac",
                 "-mabi=lp64", "-ffreestanding"],
}
HOST = {
    "gcc": ["gcc", "-Wmissing-prototypes", "-Wshadow=local"],
    "clang": ["clang", "-Wmissing-prototypes"],
}


class Tap:
    def __init__(self):
        self.count = 0
        self.failed = 0
        self.todos = 0

    def check(self, what, ok, detail=""):
        self.count += 1
        if ok:
            print(f"ok {self.count} - {what}")
        else:
            self.failed += 1
            print(f"not ok {self.count} - {what}")
            for line in str(detail).splitlines()[:25]:
                print("# " + line)
        sys.stdout.flush()
        return ok

    def skip(self, what, reason):
        """A loud skip: on stdout as TAP and on stderr; a failure when
        BCGEN_REQUIRE_CROSS=1 (for CI machines that must have the tools)."""
        if os.environ.get("BCGEN_REQUIRE_CROSS") == "1":
            return self.check(what, False, reason + " (and BCGEN_REQUIRE_CROSS=1)")
        self.count += 1
        print(f"ok {self.count} - {what} # SKIP {reason}")
        print(f"#\n# WARNING: {what} SKIPPED: {reason}\n#")
        print(f"bcgen tests/aot: WARNING: {what} SKIPPED: {reason}", file=sys.stderr)
        sys.stdout.flush()

    def todo(self, what, reason):
        """TAP's "not ok ... # TODO": a known failure still to fix, shown in the
        log and not counted (tests/run.sh skips it)."""
        self.count += 1
        self.todos += 1
        print(f"not ok {self.count} - {what} # TODO {reason}")
        sys.stdout.flush()

    def finish(self):
        todo = f", {self.todos} todo" if self.todos else ""
        print(f"# {self.count - self.failed - self.todos} passed, {self.failed} failed{todo}")
        sys.exit(1 if self.failed else 0)


def missing_tools(argv_prefixes):
    """The programs of these command lines that are not on PATH."""
    return sorted({p[0] for p in argv_prefixes if shutil.which(p[0]) is None})


def bcgen(*args, cwd=None):
    return subprocess.run([BCGEN] + list(args), capture_output=True, text=True, cwd=cwd)


def compile_c(prefix, path, include_dir, extra=(), output=os.devnull):
    """Compiles PATH with the strict flags (into OUTPUT); returns (ok, output)."""
    argv = list(prefix) + STRICT + ["-I", include_dir] + list(extra) + ["-c", path, "-o",
                                                                         output]
    r = subprocess.run(argv, capture_output=True, text=True)
    return r.returncode == 0 and not r.stderr.strip(), " ".join(argv) + "\n" + r.stderr


# ---- the kernels ----------------------------------------------------------------

def kernels_for(dtype, rows=3, columns=4):
    """(name, expression, operands) kernels that call every helper family and
    libm function bcgen has for DTYPE, with broadcasting, and casts to and
    from other dtypes."""
    t = dtype
    ops = [f"a={t}[{rows},{columns}]", f"b={t}[{columns}]", f"c={t}[{rows},1]"]
    if dtype in FLOAT_DTYPES:
        body = ("sqrt(a) + exp(b) - log(c) * sin(a) / cos(b) + tanh(c) + floor(a) - ceil(b)"
                " + a // b + a % c + a ** b + minimum(a, b) + maximum(b, c) + abs(a)"
                " + clip(a, b, c) + -a")
        casts = "i32(a) + u8(b) + i64(c) + u64(a) + i8(b) + u16(c) + u32(a) + i16(b)"
        special = f"where(a < b, {t}(1e300) * 1e300, -c) + (a > c)"
    else:
        body = ("where(a > b, a // b, a % c) + minimum(a, b) * maximum(b, c) - (a << b)"
                " + (a >> c) + a ** c + abs(a) + ((a & b) ^ (c | ~a)) + clip(a, b, c)")
        casts = "i8(a) + u16(b) + f32(c) + f64(a) + i64(b) + u64(c) + bool(a) + u8(b)"
        special = ("where(a && b, c, a) + where(b || !c, a, b) + (a == b) * a + (a != c)"
                   + ("" if dtype == "bool" else " - a + 7 * b - (3 // c)"))
    # issue 13's functions with helpers of their own (sign has no bool loop)
    if dtype in ("f32", "f64"):
        functions = ("expit(a) + logaddexp(a, b) - logaddexp2(b, c) + sign(a) * square(b)"
                     " + reciprocal(c) + round(a) + deg2rad(b) - rad2deg(c)")
    elif dtype == "bool":
        functions = "square(a) + reciprocal(b) + round(c) + logical_xor(a, c)"
    else:
        functions = "sign(a) + square(b) + reciprocal(c) + round(a) + logical_xor(a, c)"
    kernels = [
        (f"ops_{t}", body, ops),
        (f"casts_{t}", casts, ops),
        (f"special_{t}", special, ops),
        (f"functions_{t}", functions, ops),
    ]
    # issue 14's saturating functions: Arm's DSP intrinsics where the target
    # has them, portable C elsewhere (docs/semantics.md)
    if dtype in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"):
        kernels.append((f"saturating_{t}", "sub_sat(add_sat(a, b), sub_sat(c, a))", ops))
    if dtype in ("i16", "u16"):   # unrolled by an even factor: pairs (__qadd16 on Arm)
        kernels.append((f"pair_add_{t}", "add_sat(a, b)", ops))
        kernels.append((f"pair_sub_{t}", "sub_sat(b, a)", ops))
    fixed = {"i8": "mul_q7", "i16": "mul_q15", "i32": "mul_q31"}.get(dtype)
    if fixed:
        kernels.append((f"fixed_{t}", f"{fixed}({fixed}(a, b), add_sat(c, a))", ops))
    return kernels


# mode -> (bcgen options, rows, columns of the kernels' operands)
UNROLL_MODES = {"full": (["--unroll", "full"], 3, 4), "looped": (["--unroll", "none"], 6, 9),
                "grouped": (["--unroll", "4"], 6, 9)}


def aot_args(kernels, directory, stem, extra=()):
    """The bcgen aot command line for KERNELS, writing DIRECTORY/STEM.c/.h."""
    args = ["aot"]
    for name, expr, ops in kernels:
        args += ["-k", f"{name}={expr}"]
        for op in ops:
            args += ["-i", op]
    return args + ["-o", os.path.join(directory, stem + ".c")] + list(extra)
