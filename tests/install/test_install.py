#!/usr/bin/env python3
"""`make install` gives a working library: install into a temporary prefix,
then build a small program against the installed header with pkg-config,
once against libbcgen.so and once statically against libbcgen.a, and run
both (the shared library carries libtcc inside it: see gen/tccshim.c)."""
import os
import subprocess
import sys
import tempfile

BUILD = os.environ.get("BUILD", "build")
PROGRAM = r"""
#include <bcgen.h>
#include <stdio.h>
int main(void)
{
    bcg_context *ctx = bcg_context_new();
    int64_t sa[] = {2, 3}, sb[] = {3};
    bcg_operand ops[] = {{"a", BCG_F32, 2, sa, NULL}, {"b", BCG_F32, 1, sb, NULL}};
    bcg_kernel *k;
    bcg_error err;
    if (bcg_compile(ctx, "a * b + 1", ops, 2, NULL, &k, &err) != BCG_OK) {
        printf("compile: %s\n", err.message);
        return 1;
    }
    float a[6] = {0, 1, 2, 3, 4, 5}, b[3] = {1, 2, 3}, out[6];
    const void *in[] = {a, b};
    if (bcg_run(k, out, in, &err) != BCG_OK) {
        printf("run: %s\n", err.message);
        return 1;
    }
    for (int i = 0; i < 6; i++)
        printf("%g ", out[i]);
    printf("%s\n", bcg_kernel_note(k));
    bcg_context_free(ctx);
    return 0;
}
"""
EXPECTED = "1 3 7 4 9 16 "
n = 0
failed = 0


def check(what, ok, detail=""):
    global n, failed
    n += 1
    print(("ok %d - %s" if ok else "not ok %d - %s") % (n, what))
    if not ok:
        failed += 1
        for line in str(detail).splitlines()[:20]:
            print("# " + line)


def sh(cmd, env=None):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True, env=env)


def main():
    with tempfile.TemporaryDirectory() as prefix:
        r = sh("make -s install BUILD=%s PREFIX=%s" % (BUILD, prefix))
        check("make install", r.returncode == 0, r.stdout + r.stderr)
        for path in ("include/bcgen.h", "lib/libbcgen.a", "lib/libbcgen.so", "bin/bcgen",
                     "lib/pkgconfig/bcgen.pc"):
            check("installs " + path, os.path.exists(os.path.join(prefix, path)))
        # no LD_LIBRARY_PATH: bcgen.pc's Libs carry an rpath to its libdir
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(prefix, "lib/pkgconfig"))
        env.pop("LD_LIBRARY_PATH", None)
        src = os.path.join(prefix, "prog.c")
        with open(src, "w") as f:
            f.write(PROGRAM)
        exe = os.path.join(prefix, "prog_shared")
        r = sh("cc -std=c99 -Wall -Wextra -Werror %s -o %s $(pkg-config --cflags --libs bcgen)"
               % (src, exe), env)
        check("builds against libbcgen.so with pkg-config", r.returncode == 0, r.stderr)
        r = sh(exe, env)
        check("runs with libbcgen.so (JIT inside the shared library), found by the rpath",
              r.returncode == 0 and r.stdout.strip() == EXPECTED.strip(), r.stdout + r.stderr)
        r = sh("nm -D --defined-only %s/lib/libbcgen.so | awk '{print $3}' | grep -v '^bcg_'"
               % prefix)
        check("libbcgen.so exports only bcg_ symbols", r.stdout.strip() == "", r.stdout)
        exe = os.path.join(prefix, "prog_static")
        r = sh("cc -std=c99 -Wall -Wextra -Werror %s -o %s $(pkg-config --cflags bcgen) "
               "%s/lib/libbcgen.a $(pkg-config --libs-only-other --static bcgen) "
               "-ldl -lm -lpthread" % (src, exe, prefix), env)
        check("builds statically against libbcgen.a alone (libtcc's objects are inside)",
              r.returncode == 0, r.stderr)
        r = sh(exe, env)
        check("runs statically linked", r.returncode == 0 and r.stdout.strip() == EXPECTED.strip(),
              r.stdout + r.stderr)
        r = sh("%s/bin/bcgen shape 3,1 4" % prefix)
        check("installed bcgen runs", r.stdout.strip() == "(3, 4)", r.stdout + r.stderr)
    print("# install: %d passed, %d failed" % (n - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
