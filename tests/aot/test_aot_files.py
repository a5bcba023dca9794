#!/usr/bin/env python3
"""`bcgen aot` writes its pair whole or not at all (issue 14, item 9): a
header that cannot be written (a missing directory, a read-only one) is an
error naming that file and the reason, and neither file of the pair, nor a
temporary, is left behind; an existing pair is replaced only whole."""
import os
import shutil
import tempfile

from _aot import Tap, bcgen

tap = Tap()
ARGS = ["aot", "-k", "k=a + 1", "-i", "a=f32[4]"]


def main():
    work = tempfile.mkdtemp(prefix="bcgen-aotfiles-")
    try:
        r = bcgen(*ARGS, "-o", "k.c", "--header", "missing/k.h", cwd=work)
        tap.check("a header in a missing directory: exit 1, naming the file and the reason",
                  r.returncode == 1 and "missing/k.h" in r.stderr and
                  "No such file or directory" in r.stderr, r.stderr)
        tap.check("... and nothing is left behind", os.listdir(work) == [], str(os.listdir(work)))

        r = bcgen(*ARGS, "-o", "k.c", cwd=work)
        tap.check("the pair is written", r.returncode == 0 and
                  sorted(os.listdir(work)) == ["k.c", "k.h"], r.stderr)
        before = open(os.path.join(work, "k.c")).read()
        if os.geteuid() != 0:  # root writes into read-only directories anyway
            ro = os.path.join(work, "ro")
            os.mkdir(ro, 0o555)
            r = bcgen(*ARGS, "-o", "k.c", "--header", "ro/k.h", cwd=work)
            tap.check("a read-only directory for the header: an error naming it",
                      r.returncode == 1 and "ro/k.h" in r.stderr, r.stderr)
        r = bcgen("aot", "-k", "k=a * 2", "-i", "a=f32[4]", "-o", "k.c", "--header",
                  "nowhere/k.h", cwd=work)
        tap.check("a failed regeneration leaves the old pair as it was",
                  r.returncode == 1 and open(os.path.join(work, "k.c")).read() == before and
                  not [n for n in os.listdir(work) if ".tmp-" in n], r.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return tap.finish()


if __name__ == "__main__":
    main()
