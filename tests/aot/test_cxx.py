#!/usr/bin/env python3
"""An AOT .c compiles as C99 and as C++ (issue 14, item 4), with and
without --restrict: the pointer qualifier is the header's BCGEN_RESTRICT
(restrict in C, __restrict in C++), never a bare `restrict`."""
import os
import shutil
import subprocess
import tempfile

from _aot import Tap, bcgen, missing_tools

tap = Tap()
KERNELS = ["-k", "scale=x * gain + bias", "-i", "x=f32[4,16]", "-i", "gain=f32[16]",
           "-i", "bias=f32[]", "-k", "relu=maximum(v, 0)", "-i", "v=i16[64]",
           "-k", "q=i8(w * 3.5) // 2 + where(w > 0, 1, 0)", "-i", "w=f32[8]",
           "-k", "bump=a + 1", "-i", "a=i32[3,4]", "--inplace", "a"]
COMPILERS = [["gcc", "-x", "c", "-std=c99", "-pedantic"],
             ["g++", "-x", "c++", "-std=c++11", "-pedantic"],
             ["clang++", "-x", "c++", "-std=c++11"]]


def main():
    work = tempfile.mkdtemp(prefix="bcgen-cxx-")
    try:
        for restrict in (False, True):
            label = "with --restrict" if restrict else "without --restrict"
            src = os.path.join(work, "k%d.c" % restrict)
            r = bcgen("aot", *KERNELS, *(["--restrict"] if restrict else []), "-o", src)
            if not tap.check("bcgen aot %s" % label, r.returncode == 0, r.stderr):
                continue
            text = open(src).read()
            tap.check("no bare restrict in the .c %s" % label,
                      " restrict " not in text and "*restrict" not in text, "")
            for cc in COMPILERS:
                if missing_tools([cc[:1]]):
                    tap.skip("%s %s" % (cc[0], label), cc[0] + " not installed")
                    continue
                r = subprocess.run(cc + ["-Wall", "-Wextra", "-Werror", "-I", work, "-c", src,
                                         "-o", os.path.join(work, "k.o")],
                                   capture_output=True, text=True)
                tap.check("the .c compiles with %s %s" % (" ".join(cc), label),
                          r.returncode == 0 and not r.stderr.strip(), r.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return tap.finish()


if __name__ == "__main__":
    main()
