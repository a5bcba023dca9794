#!/usr/bin/python3
"""test_fuzz.py - the short fuzz run of `make test`: each libFuzzer harness
in $FUZZ_BUILD/fuzz/ (make safety-fuzz; ASan + UBSan) first replays its
seed corpus tests/fuzz/corpus/NAME/ and its crash regressions
tests/fuzz/regress/NAME/ (inputs that once crashed, kept after the fix),
then runs a fixed number of new inputs from a fixed seed (RUNS: chosen to
take about 30 s per harness on the 2-core development machine, 3 minutes
in all).  The seed fixes libFuzzer's random choices, not every input: the
corpus it grows still differs a little from run to run (coverage under
ASan is not exactly repeatable), and so does the time (fuzz_tmpl's 750000
inputs took 22 to 56 s, once 98 s; -max_total_time caps it at 90 s).  A
crash, a sanitizer report, a leak or a failed FUZZ_CHECK fails the harness; the
input is left in $FUZZ_BUILD/crashes/.  `make fuzz` is the long,
time-bounded run (FUZZ_SECONDS per harness), `make fuzz-diff` the long run
of fuzz_jit_diff's generator without libFuzzer (DIFF_SECONDS).  Inputs of
bugs not fixed yet wait in tests/fuzz/open/NAME/ (not replayed here) and
move to regress/ with the fix."""
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _safety  # noqa: E402

FUZZ_BUILD = os.environ.get("FUZZ_BUILD", "build-fuzz")
# New inputs per harness in the short run, each about 30 s here (measured
# with -seed=1: later inputs are longer and slower, so the time is not
# linear in the count).  tcc runs in every compile input.
# Cut this session (make test ran 2 programs at a time, fuzzing beside the
# sanitizer suites): programs of several statements made fuzz_aot's and
# fuzz_jit_diff's inputs slower (203 s and the 300 s cap for the old counts).
# Cut again (issue 11's tests brought make test to 15.4 min): the two
# parser harnesses whose inputs cost the least coverage per second, expr
# 1100000 -> 800000 (43 s) and tmpl 750000 -> 500000 (56 s).
# And again (the reversed/spaced/zmm/f64 exp tests: 16.1 min, 6 of them
# beside a benchmark): expr 800000 -> 600000, spec 2000000 -> 1500000.
RUNS = {"expr": 600000, "spec": 1500000, "npy": 400000, "tmpl": 500000, "compile": 25000,
        "aot": 12000, "jit_diff": 3000, "specfile": 200000}
SCALE = float(os.environ.get("FUZZ_RUNS_SCALE", "1"))


def main():
    runner = _safety.Runner(os.path.join(FUZZ_BUILD, "sanitizer-reports"))
    harnesses = sorted(glob.glob(os.path.join(_safety.ROOT, "tests", "fuzz", "fuzz_*.c")))
    names = [os.path.basename(h)[len("fuzz_"):-2] for h in harnesses]
    if not _safety.require([os.path.join(FUZZ_BUILD, "fuzz", "fuzz_" + n) for n in names],
                           runner, "make safety-fuzz"):
        return runner.finish()
    env = runner.sanitizer_env()
    env.pop("ASAN_OPTIONS")  # libFuzzer reports itself; its exit status is what counts
    env.pop("UBSAN_OPTIONS")
    crashes = os.path.join(FUZZ_BUILD, "crashes")
    os.makedirs(crashes, exist_ok=True)
    for name in names:
        binary = os.path.join(FUZZ_BUILD, "fuzz", "fuzz_" + name)
        seeds = os.path.join("tests", "fuzz", "corpus", name)
        regress = sorted(glob.glob(os.path.join("tests", "fuzz", "regress", name, "*")))
        inputs = sorted(glob.glob(os.path.join(seeds, "*"))) + regress
        if not inputs:
            runner.emit(False, "fuzz_%s has no seed corpus in %s" % (name, seeds))
            continue
        runner.run("fuzz_%s replays %d seeds and %d regressions" % (name, len(inputs) - len(regress),
                                                                  len(regress)),
                   [binary, "-runs=1"] + inputs, env, timeout=600)
        work = os.path.join(FUZZ_BUILD, "short-corpus", name)
        os.makedirs(work, exist_ok=True)
        for old in glob.glob(os.path.join(work, "*")):
            os.remove(old)
        runs = max(1, int(RUNS.get(name, 100000) * SCALE))
        runner.run("fuzz_%s: %d new inputs from seed 1" % (name, runs),
                   [binary, "-seed=1", "-runs=%d" % runs, "-timeout=20", "-rss_limit_mb=4096",
                    "-max_total_time=90", "-print_final_stats=1",
                    "-artifact_prefix=%s/%s-" % (crashes, name), work, seeds],
                   env, timeout=600)
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
