#!/usr/bin/python3
"""test_asan.py - the test suites against the AddressSanitizer +
UndefinedBehaviorSanitizer build (make safety-asan, in $ASAN_BUILD,
default build-asan/): every unit test, the cli, golden and aot suites
(without the suites whose time is the cross compilers', qemu's and
cppcheck's), and a subset of the NumPy differential test (each case with
the JIT and with --reference: tcc-generated code is invisible to ASan, the
reference evaluator is not).  test_microkernels checks each of its cases
in one of its six layouts (BCGEN_TEST_SAMPLE).  LeakSanitizer runs at
every process exit, so a leak on any path, errors included, fails the
program that leaked.  `make test-asan`."""
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _safety  # noqa: E402

ASAN_BUILD = os.environ.get("ASAN_BUILD", "build-asan")
DIFF_COUNT = int(os.environ.get("ASAN_DIFF_COUNT", "150"))


def main():
    runner = _safety.Runner(os.path.join(ASAN_BUILD, "sanitizer-reports"))
    if not _safety.require([os.path.join(ASAN_BUILD, "bcgen")], runner, "make safety-asan"):
        return runner.finish()
    # test_microkernels checks each of its cases in one of its six layouts, not
    # in all six (BCGEN_TEST_SAMPLE): tcc's code is invisible to ASan, the
    # microkernels and the compiler are not, and all six ran 240 s here
    env = runner.sanitizer_env({"BUILD": ASAN_BUILD, "BCGEN_TEST_SAMPLE": "6"})
    units = sorted(glob.glob(os.path.join(ASAN_BUILD, "tests", "test_*")))
    if not units:
        runner.emit(False, "no unit tests in %s/tests" % ASAN_BUILD)
    for test in units:
        runner.run("asan unit/" + os.path.basename(test), [test], env)
    for suite in ("cli", "golden", "aot"):
        for program in sorted(glob.glob(os.path.join(_safety.ROOT, "tests", suite, "test_*.py"))):
            # the cross compilers', qemu's and cppcheck's time, not bcgen's:
            # test_aot_pair runs the instrumented `bcgen aot` over the same generator
            if os.path.basename(program) in ("test_cross_compile.py", "test_misra.py",
                                             "test_qemu_arm.py"):
                continue
            runner.run("asan %s/%s" % (suite, os.path.basename(program)),
                       [_safety.PYTHON, program], env)
    runner.run("asan diff/kernel_numpy --count %d (JIT, --reference, --unroll)" % DIFF_COUNT,
               [_safety.PYTHON, "tests/diff/kernel_numpy.py", "--count", str(DIFF_COUNT)], env)
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
