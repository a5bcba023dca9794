#!/usr/bin/env python3
"""Golden tests: pin bcgen's printed plans and emitted C.

Each case in cases.txt runs `bcgen ARGS`; its stdout must equal
expected/NAME.txt byte for byte.  Emitted kernels (emit_* cases) must also
compile warning-free with gcc and clang in strict C99.  --update rewrites the
expected files (review the diff before committing)."""
import os
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("BUILD", "build")
BCGEN = os.path.join(BUILD, "bcgen")
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c", "-o", "/dev/null"]


def cases():
    with open(os.path.join(HERE, "cases.txt")) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                name, args = line.split(":", 1)
                yield name.strip(), shlex.split(args)


def main():
    update = "--update" in sys.argv
    compilers = [c for c in ("gcc", "clang") if subprocess.run(
        ["sh", "-c", "command -v " + c], capture_output=True).returncode == 0]
    n = 0
    failed = 0
    for name, args in cases():
        n += 1
        run = subprocess.run([BCGEN] + args, capture_output=True, text=True)
        path = os.path.join(HERE, "expected", name + ".txt")
        if run.returncode != 0:
            print(f"not ok {n} - {name}: bcgen exited {run.returncode}: {run.stderr.strip()}")
            failed += 1
            continue
        if update:
            with open(path, "w") as f:
                f.write(run.stdout)
        try:
            with open(path) as f:
                want = f.read()
        except FileNotFoundError:
            want = None
        if want != run.stdout:
            print(f"not ok {n} - {name}: output differs from {path}")
            with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as got:
                got.write(run.stdout)
            diff = subprocess.run(["diff", "-u", path if want is not None else "/dev/null",
                                   got.name], capture_output=True, text=True).stdout
            for line in diff.splitlines()[:40]:
                print("# " + line)
            os.unlink(got.name)
            failed += 1
            continue
        print(f"ok {n} - {name}")
        if name.startswith("emit_"):
            with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as src:
                src.write(run.stdout)
            for cc in compilers:
                n += 1
                comp = subprocess.run([cc] + STRICT + [src.name], capture_output=True, text=True)
                if comp.returncode == 0 and not comp.stderr:
                    print(f"ok {n} - {name} compiles with {cc} -std=c99 -pedantic -Werror")
                else:
                    print(f"not ok {n} - {name} with {cc}:")
                    for line in (comp.stderr or "").splitlines()[:20]:
                        print("# " + line)
                    failed += 1
            os.unlink(src.name)
    print(f"# {n - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
