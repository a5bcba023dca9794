#!/usr/bin/python3
"""oracle_self_check.py - the test of the differential test, in `make test`.

Runs `kernel_numpy.py --self-check`: the NumPy oracle and the case generator
of _gen_cases.py without bcgen (documented semantics, the 1-ulp comparison,
error bounds of hand-made trees, every generated case, coverage of operators,
layouts and long runs, and how many float elements are checked tightly).
A wrong oracle would make kernel_numpy.py pass or fail for the wrong reason.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_numpy  # noqa: E402

if __name__ == "__main__":
    sys.exit(kernel_numpy.main(["--self-check"] + sys.argv[1:]))
