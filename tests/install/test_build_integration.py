#!/usr/bin/env python3
"""Build integration of `bcgen aot` (issue 14, item 8), from an installed
tree (`make install PREFIX=tmp`):
  - the CMake package: find_package(bcgen CONFIG) with CMAKE_PREFIX_PATH,
    its version file, bcgen::bcgen for JIT users (examples/cmake-host: the
    JIT and a bcgen_generate kernel give the same bytes), and
    bcgen_generate in a cross build (examples/cmake-firmware, arm-none-eabi
    through a toolchain file), which regenerates the pair when the spec
    changes and writes what `bcgen aot --spec` writes anywhere else;
  - the Make fragment share/bcgen/bcgen.mk in a plain Makefile."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "aot"))
from _aot import Tap, missing_tools  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
tap = Tap()


# the builds here are their own: not sub-makes of `make test` (whose
# MAKEFLAGS would add jobserver options and "Entering directory" lines)
ENV = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, env=ENV, **kw)


def read(p):
    with open(p, "rb") as f:
        return f.read()


def cmake(source, build, prefix, *extra):
    r = run(["cmake", "-S", source, "-B", build, "-DCMAKE_PREFIX_PATH=" + prefix] + list(extra))
    if r.returncode != 0:
        return r
    return run(["cmake", "--build", build])


work = tempfile.mkdtemp(prefix="bcgen-build-integration-")
prefix = os.path.join(work, "prefix")
r = run(["make", "-s", "install", "BUILD=" + BUILD, "PREFIX=" + prefix], cwd=ROOT)
tap.check("make install PREFIX=... installs the CMake package and the Make fragment",
          r.returncode == 0
          and all(os.path.exists(os.path.join(prefix, p)) for p in
                  ["lib/cmake/bcgen/bcgenConfig.cmake",
                   "lib/cmake/bcgen/bcgenConfigVersion.cmake", "share/bcgen/bcgen.mk"]),
          r.stderr)
if missing_tools([["cmake"]]):
    tap.skip("the CMake package", "cmake is not installed (make deps installs it)")
    tap.finish()

# ---- the version file ----------------------------------------------------------------
probe = os.path.join(work, "probe")
os.makedirs(probe)
with open(os.path.join(probe, "CMakeLists.txt"), "w") as f:
    f.write("cmake_minimum_required(VERSION 3.13)\nproject(probe NONE)\n"
            "find_package(bcgen ${WANT} CONFIG QUIET)\n"
            'message(STATUS "found=${bcgen_FOUND} version=${bcgen_VERSION} '
            'cli=$<TARGET_EXISTS:bcgen::cli>")\n'
            "if(TARGET bcgen::bcgen AND TARGET bcgen::cli AND TARGET bcgen::static)\n"
            '  message(STATUS "targets=yes")\nendif()\n')
for want, found in [("0.1", "1"), ("0.1.0", "1"), ("0.2", "0"), ("1.0", "0"), ("", "1")]:
    shutil.rmtree(os.path.join(work, "probe-build"), ignore_errors=True)
    r = run(["cmake", "-S", probe, "-B", os.path.join(work, "probe-build"),
             "-DCMAKE_PREFIX_PATH=" + prefix, "-DWANT=" + want])
    ok = f"found={found}" in r.stdout if found == "1" else "found=0" in r.stdout
    tap.check(f"find_package(bcgen {want or '(any)'}) {'finds' if found == '1' else 'refuses'} "
              "the installed 0.1.0", r.returncode == 0 and ok
              and (found == "0" or "targets=yes" in r.stdout), r.stdout + r.stderr)

# ---- the host application: find_package, the JIT and bcgen_generate -----------------------
host_build = os.path.join(work, "host-build")
r = cmake(os.path.join(ROOT, "examples", "cmake-host"), host_build, prefix)
if tap.check("examples/cmake-host configures and builds against the installed package",
             r.returncode == 0, r.stdout[-2000:] + r.stderr):
    r = run([os.path.join(host_build, "app")])
    tap.check("the app's JIT result and its bcgen_generate kernel are the same bytes",
              r.returncode == 0 and r.stdout.startswith("same "), r.stdout + r.stderr)

# ---- the firmware: a cross build through a toolchain file -----------------------------------
if missing_tools([["arm-none-eabi-gcc"]]):
    tap.skip("examples/cmake-firmware", "arm-none-eabi-gcc is not installed (make aot-deps)")
else:
    source = os.path.join(work, "cmake-firmware")
    shutil.copytree(os.path.join(ROOT, "examples", "cmake-firmware"), source)
    fw_build = os.path.join(work, "fw-build")
    r = cmake(source, fw_build, prefix,
              "-DCMAKE_TOOLCHAIN_FILE=" + os.path.join(source, "arm-none-eabi.cmake"))
    elf = os.path.join(fw_build, "firmware.elf")
    if tap.check("examples/cmake-firmware cross-builds with arm-none-eabi-gcc",
                 r.returncode == 0 and os.path.exists(elf), r.stdout[-2000:] + r.stderr):
        r = run(["arm-none-eabi-nm", elf])
        tap.check("firmware.elf holds the generated kernels",
                  all(f" T {k}\n" in r.stdout for k in ("calibrate", "magnitude", "to_q15")),
                  r.stdout[-600:])
        r = run(["arm-none-eabi-readelf", "-h", elf])
        tap.check("firmware.elf is an ARM executable", "Machine:" in r.stdout
                  and "ARM" in r.stdout, r.stdout)
        # the pair in the build tree is what bcgen aot --spec writes anywhere else
        elsewhere = os.path.join(work, "elsewhere")
        os.makedirs(elsewhere)
        shutil.copy(os.path.join(source, "kernels.bcg"), elsewhere)
        r = run([os.path.join(prefix, "bin", "bcgen"), "aot", "--spec", "kernels.bcg", "-o",
                 "kernels.c", "--misra-report", "kernels.misra.md"], cwd=elsewhere)
        generated = os.path.join(fw_build, "bcgen")
        tap.check("the build tree's pair and MISRA record (MISRA_REPORT) are byte-identical to "
                  "bcgen aot --spec run elsewhere",
                  r.returncode == 0 and all(
                      read(os.path.join(generated, n)) == read(os.path.join(elsewhere, n))
                      for n in ("kernels.c", "kernels.h", "kernels.misra.md")), r.stderr)
        before = read(os.path.join(generated, "kernels.c"))
        r = run(["cmake", "--build", fw_build])
        tap.check("a second build does not regenerate", r.returncode == 0
                  and "bcgen: kernels.c" not in r.stdout, r.stdout)
        spec = os.path.join(source, "kernels.bcg")
        with open(spec) as f:
            text = f.read()
        with open(spec, "w") as f:
            f.write(text.replace("    unroll none\n", "    unroll 2\n"))
        r = run(["cmake", "--build", fw_build])
        after = read(os.path.join(generated, "kernels.c"))
        tap.check("editing the spec regenerates the pair on the next build",
                  r.returncode == 0 and "bcgen: kernels.c" in r.stdout and after != before
                  and b"runs 16 groups of 2" in after, r.stdout + r.stderr)
        with open(spec, "w") as f:
            f.write(text.replace("input z = f32[32]", "input z = f32[33]"))
        r = run(["cmake", "--build", fw_build])
        tap.check("a spec error fails the build with FILE:LINE:COLUMN",
                  r.returncode != 0 and "kernels.bcg:13:" in r.stdout + r.stderr
                  and "cannot broadcast" in r.stdout + r.stderr, r.stdout + r.stderr)

# ---- bcgen_generate's own errors ---------------------------------------------------------------
bad = os.path.join(work, "bad")
os.makedirs(bad)
with open(os.path.join(bad, "CMakeLists.txt"), "w") as f:
    f.write("cmake_minimum_required(VERSION 3.13)\nproject(bad C)\n"
            "find_package(bcgen CONFIG REQUIRED)\nadd_executable(app app.c)\n"
            "bcgen_generate(TARGET app SPEC missing.bcg)\n")
with open(os.path.join(bad, "app.c"), "w") as f:
    f.write("int main(void) { return 0; }\n")
r = run(["cmake", "-S", bad, "-B", os.path.join(work, "bad-build"), "-DCMAKE_PREFIX_PATH=" + prefix])
tap.check("bcgen_generate with a missing spec stops the configure step naming it",
          r.returncode != 0 and "missing.bcg does not exist" in r.stderr, r.stderr)

# ---- the Make fragment ---------------------------------------------------------------------
plain = os.path.join(work, "plain")
os.makedirs(os.path.join(plain, "specs"))
with open(os.path.join(plain, "specs", "filters.bcg"), "w") as f:
    f.write("bcgen-spec 1\nkernel smooth = (a + b) / 2\n  input a = f32[8]\n  input b = f32[8]\n"
            "kernel halve = v // 2\n  input v = i16[8]\n  input unused = i8[]\n")
with open(os.path.join(plain, "main.c"), "w") as f:
    f.write('#include <stdio.h>\n#include "filters.h"\n'
            "int main(void)\n{\n    float a[8], b[8], out[SMOOTH_OUT_ELEMENTS];\n"
            "    int16_t v[8] = {-3, -2, -1, 0, 1, 2, 3, 4}, h[8];\n"
            "    for (int i = 0; i < 8; i++) { a[i] = (float)i; b[i] = 1.0f; }\n"
            "    smooth(out, a, b);\n    halve(h, v, 0);\n"
            '    printf("%g %g %d %d\\n", (double)out[0], (double)out[7], h[0], h[7]);\n'
            "    return 0;\n}\n")
with open(os.path.join(plain, "Makefile"), "w") as f:
    f.write("BCGEN_SPECS = specs/filters.bcg\nBCGEN_OUTDIR = gen\n"
            f"include {prefix}/share/bcgen/bcgen.mk\n"
            "CFLAGS = -std=c99 -Wall -Wextra -Werror -pedantic -O2 -I$(BCGEN_OUTDIR)\n"
            "app: main.o $(BCGEN_OBJECTS)\n\t$(CC) -o $@ $^\n"
            "main.o: main.c $(BCGEN_HEADERS)\n")
r = run(["make", "-s"], cwd=plain)
ok = r.returncode == 0 and os.path.exists(os.path.join(plain, "gen", "filters.h"))
if tap.check("a plain Makefile including bcgen.mk generates, builds and links the pair", ok,
             r.stdout + r.stderr):
    r = run([os.path.join(plain, "app")])
    tap.check("the Makefile's program computes the kernels", r.stdout.strip() == "0.5 4 -2 2",
              r.stdout + r.stderr)
    r = run(["make"], cwd=plain)
    tap.check("make again: nothing to regenerate", r.returncode == 0
              and "aot --spec" not in r.stdout, r.stdout)
    with open(os.path.join(plain, "specs", "filters.bcg"), "a") as f:
        f.write("kernel twice = v * 2\n  input v = i16[8]\n")
    r = run(["make"], cwd=plain)
    tap.check("editing the spec regenerates the pair and rebuilds", r.returncode == 0
              and "aot --spec specs/filters.bcg -o gen/filters.c" in r.stdout
              and b"void twice(" in read(os.path.join(plain, "gen", "filters.h")), r.stdout)
    r = run(["make", "-s", "bcgen-clean"], cwd=plain)
    tap.check("make bcgen-clean removes the generated files",
              r.returncode == 0 and not os.path.exists(os.path.join(plain, "gen", "filters.c")))

shutil.rmtree(work)
tap.finish()
