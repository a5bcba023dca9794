"""test_shape_cli.py - `bcgen shape`: printed results, --json, exit statuses
0/1/2, exact messages for the key errors, and that errors and warnings go
to stderr while stdout holds only the result (or, with --json, exactly one
JSON object).

Run from the repository root; BUILD names the build directory (default
"build").  Prints one TAP line per check.
"""
import json
import os
import subprocess
import sys

BUILD = os.environ.get("BUILD", "build")
BCGEN = os.path.join(BUILD, "bcgen")

results = []


def run(*args):
    p = subprocess.run([BCGEN, "shape", *args], capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


def check(name, condition, detail=""):
    results.append((bool(condition), name, detail))


def expect_output(args, stdout, stderr=""):
    code, out, err = run(*args)
    check("shape %s prints %s" % (" ".join(args), stdout.strip()),
          code == 0 and out == stdout and err == stderr,
          "exit %d, stdout %r, stderr %r" % (code, out, err))


def expect_error(args, status, message=None, contains=None):
    """Exit STATUS, nothing on stdout, one 'bcgen shape: ...' message on stderr."""
    code, out, err = run(*args)
    first = err.splitlines()[0] if err else ""
    ok = code == status and out == "" and first.startswith("bcgen shape: ")
    if message is not None:
        ok = ok and first == "bcgen shape: " + message
    if contains is not None:
        ok = ok and contains in first
    check("shape %s exits %d with a message" % (" ".join(repr(a) for a in args), status), ok,
          "exit %d, stdout %r, stderr %r" % (code, out, err))


def expect_json(args, status, want):
    """stdout is exactly one JSON object equal to WANT (a dict), or, when WANT
    is a string, an object {"error": ...} whose message contains it."""
    code, out, err = run(*args)
    try:
        obj = json.loads(out)
    except ValueError:
        obj = None
    if isinstance(want, dict):
        ok = obj == want
    else:
        ok = isinstance(obj, dict) and set(obj) == {"error"} and want in obj["error"]
        # the same message goes to stderr for people
        ok = ok and err.startswith("bcgen shape: ") and obj["error"] in err
    check("shape %s --json gives %s" % (" ".join(args), json.dumps(want)),
          code == status and out.count("\n") == 1 and ok,
          "exit %d, stdout %r, stderr %r" % (code, out, err))


def main():
    if not os.access(BCGEN, os.X_OK):
        print("1..1\nnot ok 1 - %s is not built" % BCGEN)
        return 1

    # ---- results, every accepted shape form ----------------------------------
    expect_output(["5,3,4,1", "3,1,1"], "(5, 3, 4, 1)\n")
    expect_output(["[5,3,4,1]", "(3,1,1)"], "(5, 3, 4, 1)\n")
    expect_output(["5x3x4x1", "3x1x1"], "(5, 3, 4, 1)\n")
    expect_output(["[8,1,6,1]", "7x1x5", "()"], "(8, 7, 6, 5)\n")
    expect_output(["5"], "(5,)\n")
    expect_output(["(5,)", "1"], "(5,)\n")
    expect_output(["[]"], "()\n")
    expect_output(["()", "scalar", "[]"], "()\n")
    expect_output(["scalar", "2,3"], "(2, 3)\n")
    expect_output([" [ 5 , 3 ] "], "(5, 3)\n")
    expect_output(["0", "1"], "(0,)\n")
    expect_output(["2,0", "1,1"], "(2, 0)\n")
    expect_output(["1", "3,1,7"], "(3, 1, 7)\n")
    expect_output(["2,1,2,2", "3,2,1"], "(2, 3, 2, 2)\n")
    expect_output(["2,3,1,5", "3,4,1"], "(2, 3, 4, 5)\n")
    expect_output(["--", "3", "2,1"], "(2, 3)\n")
    expect_output(["--inplace", "5,3,4,1", "3,1,1"], "(5, 3, 4, 1)\n")
    expect_output(["--axis", "1", "2,1,4", "3,1"], "(2, 3, 4)\n")
    expect_output(["--axis=1", "2,3,4,5", "3"], "(2, 3, 4, 5)\n")
    expect_output(["--axis", "-1", "2,3,4,5", "4,5"], "(2, 3, 4, 5)\n")
    expect_output(["--strict-rank", "3", "1"], "(3,)\n")
    expect_output(["64"] * 64, "(64,)\n")
    expect_output([",".join(["1"] * 64)], "(" + ", ".join(["1"] * 64) + ")\n")

    # ---- warnings -------------------------------------------------------------
    legacy = ("operand 0 (4,1) and operand 1 (4,) have different shapes but the same "
              "number of elements (4): they broadcast to (4,4) (16 elements), where the old "
              "pointwise (1-D) behaviour paired them element by element into (4,1)")
    expect_output(["--warn-legacy", "4,1", "4"], "(4, 4)\n",
                  "bcgen shape: warning: " + legacy + "\n")
    expect_output(["4,1", "4"], "(4, 4)\n")            # off by default
    expect_output(["--warn-legacy", "4,4", "4,4"], "(4, 4)\n")
    expect_output(["--warn-legacy", "1,4", "4"], "(1, 4)\n")   # the old rule agrees: silent

    # ---- --json ---------------------------------------------------------------
    expect_json(["--json", "5,3,4,1", "3,1,1"], 0, {"shape": [5, 3, 4, 1]})
    expect_json(["--json", "()"], 0, {"shape": []})
    expect_json(["--json", "5"], 0, {"shape": [5]})
    expect_json(["--json", "--warn-legacy", "4,1", "4"], 0,
                {"shape": [4, 4], "warnings": [legacy]})
    expect_json(["--warn-legacy", "--json", "4,1", "4"], 0,
                {"shape": [4, 4], "warnings": [legacy]})
    expect_json(["--json", "5,2,4,1", "3,1,1"], 1,
                "cannot broadcast operand 1 (3,1,1) against operand 0 (5,2,4,1): "
                "dimension 1 has size 3 in operand 1 and 2 in operand 0")
    expect_json(["--json", "3,,4"], 2, "operand 0: bad shape \"3,,4\"")
    expect_json(["--json", "--bogus", "3"], 2, "unknown option '--bogus'")
    expect_json(["--bogus", "--json", "3"], 2, "unknown option '--bogus'")
    expect_json(["--axis", "-1", "--json"], 2, "no shapes given")
    expect_json(["--json", "--inplace", "3,1", "3,4"], 1,
                "in-place result cannot change the shape of operand 0 (3,1)")
    code, out, err = run("--json", "--warn-legacy", "4,1", "4")
    check("--json warnings also go to stderr",
          err == "bcgen shape: warning: " + legacy + "\n", repr(err))

    # ---- broadcast errors: exit 1, exact messages -------------------------------
    expect_error(["5,2,4,1", "3,1,1"], 1,
                 "cannot broadcast operand 1 (3,1,1) against operand 0 (5,2,4,1): "
                 "dimension 1 has size 3 in operand 1 and 2 in operand 0")
    expect_error(["0", "5,7,3"], 1,
                 "cannot broadcast operand 1 (5,7,3) against operand 0 (0,): "
                 "dimension 2 has size 3 in operand 1 and 0 in operand 0")
    expect_error(["2,1", "1,3", "4,1"], 1,
                 "cannot broadcast operand 2 (4,1) against operand 0 (2,1): "
                 "dimension 0 has size 4 in operand 2 and 2 in operand 0")
    expect_error(["--inplace", "1,3,1", "3,1,7"], 1,
                 "in-place result cannot change the shape of operand 0 (1,3,1): broadcast "
                 "result is (3,3,7), dimension 2 has size 1 in operand 0 and 7 in the result")
    expect_error(["--inplace", "3,4", "1,3,4"], 1,
                 "in-place result cannot change the shape of operand 0 (3,4): broadcast "
                 "result is (1,3,4), which has rank 3 where operand 0 has rank 2")
    expect_error(["--strict-rank", "3", "()"], 1,
                 "operand 1 is rank 0 (a scalar); strict rank requires every operand to "
                 "have at least one dimension")
    expect_error(["--axis", "1", "2,3,4,5", "4,5"], 1,
                 "cannot broadcast operand 1 (4,5) at axis 1 against operand 0 (2,3,4,5): "
                 "dimension 2 has size 5 in operand 1 and 4 in operand 0")
    expect_error(["--axis", "3", "2,3,4", "3"], 1,
                 "axis 3 is out of range for operand 0 (2,3,4): the axis must be -1 or 0 to 2")
    expect_error(["--axis", "1", "2,3", "3,1"], 1, contains="needs operands of different ranks")
    expect_error(["--axis", "2", "2,3,4", "4,5"], 1, contains="does not fit into operand 0")
    expect_error(["4294967296,1", "1,4294967296"], 1,
                 "broadcast result (4294967296,4294967296) has more elements than INT64_MAX")

    # ---- usage and shape-text errors: exit 2 ----------------------------------------
    expect_error([], 2, "no shapes given")
    expect_json(["--json"], 2, "no shapes given")
    expect_error(["--bogus", "3"], 2, "unknown option '--bogus'")
    expect_error(["-q", "3"], 2, "unknown option '-q'")
    expect_error(["--axis"], 2, "--axis needs a value, e.g. --axis 1")
    expect_error(["--axis", "x", "3", "3"], 2, "--axis needs an integer from -64 to 64, not 'x'")
    expect_error(["--axis", "1.5", "3", "3"], 2)
    expect_error(["--axis", "65", "3", "3"], 2)
    expect_error(["--axis", "1", "3", "4", "5"], 2,
                 "axis 1 needs exactly two operands (x and y), not 3")
    expect_error(["3", "--json"], 2, "'--json' after the shapes: options go before the shapes")
    expect_error(["64"] * 65, 2, "65 shapes: at most 64 (BCG_MAX_OPERANDS)")
    expect_error([",".join(["1"] * 65)], 2, contains="more than 64 dimensions")
    # shapes like -1,2 are shapes (negative), not options
    expect_error(["-1,2"], 2, "operand 0: bad shape \"-1,2\": negative size -1 at character 1")
    expect_error(["3", "-1,2"], 2, "operand 1: bad shape \"-1,2\": negative size -1 at character 1")
    expect_error(["-5"], 2, "operand 0: bad shape \"-5\": negative size -5 at character 1")
    expect_error(["3", "4,-2"], 2, "operand 1: bad shape \"4,-2\": negative size -2 at character 3")
    expect_error(["--", "--json"], 2,
                 "operand 0: bad shape \"--json\": unexpected '-' at character 1 (expected a size)")
    expect_error(["-"], 2, contains="unexpected '-' at character 1")
    bad_texts = {
        "": "empty shape text (write [], () or scalar for rank 0)",
        "5,,3": "unexpected ',' at character 3 (expected a size)",
        "5,": "expected a size after ',' at character 2",
        "5x": "expected a size after 'x' at character 2",
        "(5,3": "'(' at character 1 is never closed",
        "(5,3]": "'(' at character 1 is closed by ']'",
        "5 3": "unexpected '3' at character 3 (expected ',' or 'x' between sizes)",
        "5,3x4": "'x' at character 4 mixes ',' and 'x' as separators",
        "a,b": "unexpected 'a' at character 1 (expected a size)",
        "5.0": "unexpected '.' at character 2 (expected ',' or 'x' between sizes)",
        "((5))": "unexpected '(' at character 2 (expected a size)",
        "Scalar": "unexpected 'S' at character 1 (expected a size)",
        "9223372036854775808": "size 9223372036854775808 at character 1 is above "
                               "INT64_MAX (9223372036854775807)",
    }
    for text, message in bad_texts.items():
        expect_error(["2", text], 2, 'operand 1: bad shape "%s": %s' % (text, message))

    # ---- help ------------------------------------------------------------------------
    for flag in ("--help", "-h"):
        code, out, err = run(flag)
        check("shape %s prints the usage" % flag,
              code == 0 and err == "" and out.startswith("usage: bcgen shape") and
              "examples:" in out and "--axis K" in out and "operand 0" in out and
              "exit status" in out, "exit %d, stderr %r" % (code, err))
    code, out, err = run("--inplace", "--help", "3")
    check("--help among the options wins", code == 0 and out.startswith("usage:"), out[:40])

    failed = 0
    for n, (ok, name, detail) in enumerate(results, 1):
        print("%s %d - %s" % ("ok" if ok else "not ok", n, name))
        if not ok:
            failed += 1
            print("#   " + detail.replace("\n", "\\n"))
    print("1..%d" % len(results))
    print("# %d checks, %d failed" % (len(results), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
