#!/usr/bin/env python3
"""bcgen cache: show (text and --json) and clear the cc backend's disk cache
in a fresh XDG_CACHE_HOME, the refusal of a directory others may write, and
the exit codes (0 ok, 1 an unusable directory, 2 usage or a bad
BCGEN_CACHE_MAX)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

BUILD = os.environ.get("BUILD", "build")
BCGEN = os.path.join(BUILD, "bcgen")
count = 0
failed = 0


def check(what, ok, detail=""):
    global count, failed
    count += 1
    if ok:
        print(f"ok {count} - {what}")
    else:
        failed += 1
        print(f"not ok {count} - {what}")
        for line in str(detail).splitlines()[:20]:
            print("# " + line)


def run(env, *args):
    return subprocess.run([BCGEN] + list(args), capture_output=True, text=True, env=env)


def expect(env, args, code, stdout_has=None, stderr_has=None, what=None):
    r = run(env, *args)
    ok = r.returncode == code
    if stdout_has is not None:
        ok = ok and stdout_has in r.stdout
    if stderr_has is not None:
        ok = ok and stderr_has in r.stderr
    check(what or "bcgen " + " ".join(args), ok,
          f"exit {r.returncode} (want {code})\nstdout: {r.stdout}\nstderr: {r.stderr}")
    return r


def main():
    if not os.access(BCGEN, os.X_OK):
        print(f"not ok 1 - {BCGEN} is not built")
        return 1
    home = tempfile.mkdtemp(prefix="bcgen-cache-cli-")
    try:
        env = dict(os.environ, XDG_CACHE_HOME=home)
        for name in ("BCGEN_CACHE_MAX", "BCGEN_CC", "CC"):
            env.pop(name, None)
        cache = os.path.join(home, "bcgen")
        expect(env, ["cache", "--help"], 0, stdout_has="usage: bcgen cache")
        expect(env, ["--help"], 0, stdout_has="cache    show or clear")
        expect(env, ["cache"], 0, stdout_has=f"directory  {cache} (not created yet)",
               what="show before anything is cached")
        check("show does not create the directory", not os.path.exists(cache))
        r = expect(env, ["cache", "show", "--json"], 0)
        info = json.loads(r.stdout or "{}")
        check("--json: nothing yet, the default limit",
              info.get("exists") is False and info.get("entries") == 0
              and info.get("limit") == 256 << 20, r.stdout)

        have_cc = shutil.which("cc") is not None
        if have_cc:
            for n in (3, 4):
                expect(env, ["run", "a + b", "-i", f"a=f32[{n}]=ones", "-i", f"b=f32[{n}]=range",
                             "--backend", "cc"], 0, what=f"run --backend cc fills the cache ({n})")
            env_limit = dict(env, BCGEN_CACHE_MAX="64M")
            r = expect(env_limit, ["cache", "show", "--json"], 0)
            info = json.loads(r.stdout or "{}")
            objects = [f for f in os.listdir(cache) if f.endswith(".so")]
            total = sum(os.path.getsize(os.path.join(cache, f)) for f in objects)
            check("--json counts the two kernels and their bytes; BCGEN_CACHE_MAX=64M",
                  info.get("entries") == 2 and info.get("bytes") == total
                  and info.get("limit") == 64 << 20 and info.get("exists") is True, r.stdout)
            r = expect(env, ["cache"], 0, stdout_has="entries    2")
            check("show prints the limit", "limit      268435456 (256.0 MiB, BCGEN_CACHE_MAX)"
                  in r.stdout, r.stdout)
            # a file that is not bcgen's survives clear
            with open(os.path.join(cache, "notes.txt"), "w") as f:
                f.write("mine\n")
            expect(env, ["cache", "clear"], 0,
                   stdout_has=f"removed 2 cached kernels ({total} bytes) from {cache}")
            check("clear removed the kernels and kept other files",
                  sorted(os.listdir(cache)) == ["notes.txt"], os.listdir(cache))
            expect(env, ["cache"], 0, stdout_has="entries    0")
        else:
            print("# SKIP: no cc on PATH: the cache is not filled")
            os.makedirs(cache, mode=0o700)

        os.chmod(cache, 0o777)
        expect(env, ["cache"], 1, stderr_has="is not a directory of this user closed to others",
               what="a cache others may write is refused by show")
        expect(env, ["cache", "clear"], 1, stderr_has="not used",
               what="and by clear")
        os.chmod(cache, 0o700)
        expect(env, ["cache", "clear"], 0, what="clear an empty cache")
        expect(env, ["cache", "frob"], 2, stderr_has="unexpected argument 'frob'")
        expect(env, ["cache", "clear", "--json"], 2, stderr_has="--json is for show")
        expect(dict(env, BCGEN_CACHE_MAX="lots"), ["cache"], 2,
               stderr_has="BCGEN_CACHE_MAX='lots' is not a size")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print(f"1..{count}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
