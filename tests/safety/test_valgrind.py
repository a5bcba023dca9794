#!/usr/bin/python3
"""test_valgrind.py - valgrind memcheck over the JIT path of the normal
build: ASan cannot see inside tcc-compiled kernels (nor inside libtcc,
which is not instrumented), memcheck can.  Runs the unit tests that
compile and run kernels (test_threads, test_hostile, test_alloc_fail's
sweep, test_limits)
and `bcgen run` on a looped, an unrolled, a strided and an in-place kernel;
any invalid read or write, use of uninitialised memory in a decision, or
leak ("definitely" or "indirectly" lost) fails.  `make test-valgrind`."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _safety  # noqa: E402

# test_api is left out: its W^X check sees valgrind's own writable+executable
# translation cache.
UNIT = ["test_threads", "test_hostile", "test_alloc_fail", "test_limits"]
VALGRIND = ["valgrind", "--tool=memcheck", "--error-exitcode=99", "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect",
            "--track-origins=no", "--quiet"]


def main():
    runner = _safety.Runner(os.path.join(_safety.BUILD, "valgrind-reports"))
    build = _safety.BUILD
    bcgen = os.path.join(build, "bcgen")
    units = [os.path.join(build, "tests", t) for t in UNIT]
    if not _safety.require(["/usr/bin/valgrind", bcgen] + units, runner,
                           "make all and the unit tests; apt-get install valgrind"):
        return runner.finish()
    env = dict(os.environ)
    env["CMOCKA_MESSAGE_OUTPUT"] = "TAP"
    for unit in units:
        runner.run("memcheck unit/" + os.path.basename(unit), VALGRIND + [unit], env)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.npy")
        runs = [
            ("looped", ["a * b + c", "-i", "a=f32[5,3,40,1]=range", "-i", "b=f32[3,1,1]=ones",
                        "-i", "c=f32[]=random:3"]),
            ("unrolled", ["where(a > 2, sqrt(a), -a) // 3", "-i", "a=f64[3,4]=range",
                          "--unroll", "full"]),
            ("strided", ["a - b", "-i", "a=i32[30,40]@[1,30]=random:1", "-i", "b=i32[40]=range"]),
            ("in place", ["a * 2 + b", "-i", "a=u16[64]=range", "-i", "b=u16[]=ones",
                          "--inplace", "a"]),
            ("math", ["exp(a) + log(abs(a) + 1) + tanh(a) * cos(a)", "-i", "a=f32[100]=random:2"]),
        ]
        for what, args in runs:
            runner.run("memcheck bcgen run (%s)" % what,
                       VALGRIND + [bcgen, "run"] + args + ["-o", out], env)
        runner.run("memcheck bcgen run (an error exits cleanly)",
                   VALGRIND + [bcgen, "run", "a +", "-i", "a=f32[3]=ones"], env,
                   allowed_status=(2,))
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
