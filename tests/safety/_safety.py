"""_safety.py - shared by the safety suite: runs a test program (a cmocka
binary or one of the python suites) under a sanitizer or valgrind, counts
its TAP lines, collects the sanitizer reports it left behind, and prints
one TAP line for it (with the failing lines and the report as comments).

Sanitizer reports go to files (log_path) rather than stderr, so a report
from a bcgen process that a python test expected to fail anyway is still
seen: any report file is a failure of the program that produced it."""
import glob
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", "build")
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")


class Runner:
    def __init__(self, report_dir):
        self.number = 0
        self.failed = 0
        self.report_dir = os.path.abspath(report_dir)
        os.makedirs(self.report_dir, exist_ok=True)
        for old in glob.glob(os.path.join(self.report_dir, "*")):
            os.remove(old)

    def sanitizer_env(self, extra=None):
        """The environment for a program under ASan/UBSan/LSan/TSan."""
        env = dict(os.environ)
        log = os.path.join(self.report_dir, "report")
        env["ASAN_OPTIONS"] = ("detect_leaks=1:log_path=%s:exitcode=23:"
                               "check_initialization_order=1:strict_string_checks=1" % log)
        env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1:log_path=%s" % log
        env["LSAN_OPTIONS"] = "log_path=%s" % log
        env["TSAN_OPTIONS"] = "halt_on_error=1:exitcode=23:log_path=%s" % log
        env["CMOCKA_MESSAGE_OUTPUT"] = "TAP"
        if extra:
            env.update(extra)
        return env

    def reports(self):
        found = []
        for path in sorted(glob.glob(os.path.join(self.report_dir, "report*"))):
            with open(path, errors="replace") as f:
                found.append((path, f.read()))
            os.rename(path, os.path.join(os.path.dirname(path),
                                         "seen" + os.path.basename(path)[len("report"):]))
        return found

    def run(self, what, argv, env, timeout=1200, allowed_status=(0,)):
        """Runs ARGV; ok when it exits with an allowed status, printed no
        'not ok' line and left no sanitizer report."""
        start = time.time()
        try:
            proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True,
                                  errors="replace", timeout=timeout)
            output, status = proc.stdout + proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as e:
            output = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) \
                else (e.stdout or "")
            status = "timeout after %ds" % timeout
        lines = output.splitlines()
        passed = sum(1 for line in lines if line.startswith("ok "))
        not_ok = [line for line in lines if line.startswith("not ok")]
        reports = self.reports()
        ok = status in allowed_status and not not_ok and not reports
        checks = " %d checks passed," % passed if passed else ""
        self.emit(ok, "%s (%s %.0fs)" % (what, checks.strip(), time.time() - start)
                  if checks else "%s (%.0fs)" % (what, time.time() - start))
        if not ok:
            print("# exit status %s" % (status,))
            for line in not_ok[:20]:
                print("# " + line)
            if not not_ok and not reports:
                for line in lines[-20:]:
                    print("# " + line)
            for path, text in reports:
                print("# sanitizer report %s:" % path)
                for line in text.splitlines()[:60]:
                    print("#   " + line)
        return ok

    def emit(self, ok, what):
        self.number += 1
        self.failed += not ok
        print("%s %d - %s" % ("ok" if ok else "not ok", self.number, what))
        sys.stdout.flush()

    def finish(self):
        print("1..%d" % self.number)
        return 1 if self.failed else 0


def require(paths, runner, hint):
    """One failing line when a build product is missing."""
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        runner.emit(False, "built: " + ", ".join(missing))
        print("# build it with: " + hint)
        return False
    return True
