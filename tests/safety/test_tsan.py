#!/usr/bin/python3
"""test_tsan.py - the threaded API tests (test_threads: four threads on one
context compiling, running, emitting and failing at once; test_api) built
with ThreadSanitizer (make safety-tsan, in $TSAN_BUILD, default
build-tsan/).  Any data race report fails.  libtcc itself is not
instrumented: jit.c serialises it behind one mutex, which TSan does see.
`make test-tsan`."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _safety  # noqa: E402

TSAN_BUILD = os.environ.get("TSAN_BUILD", "build-tsan")
TESTS = ["test_threads", "test_api", "test_threads_run", "test_cache"]


def main():
    runner = _safety.Runner(os.path.join(TSAN_BUILD, "sanitizer-reports"))
    binaries = [os.path.join(TSAN_BUILD, "tests", t) for t in TESTS]
    if not _safety.require(binaries, runner, "make safety-tsan"):
        return runner.finish()
    env = runner.sanitizer_env()
    for binary in binaries:
        runner.run("tsan unit/" + os.path.basename(binary), [binary], env)
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
