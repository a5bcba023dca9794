#!/bin/sh
# tests/run.sh SUITE - runs bcgen's test programs and sums their results.
#
# SUITE is all, unit, or the name of a folder tests/SUITE/ (cli, diff, golden, ...).  Every test program prints TAP
# lines ("ok N - what", "not ok N - what") on stdout; cmocka is asked for TAP
# too.  A program that exits non-zero counts one failure more when it printed
# no "not ok" line.  The last line is the total: "N passed, N failed".
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
suite=${1:-all}
logs=$BUILD/test-logs
mkdir -p "$logs"
total_pass=0
total_fail=0
export BUILD PYTHON
export CMOCKA_MESSAGE_OUTPUT=TAP

run_one() { # name, command...
    name=$1; shift
    log=$logs/$(echo "$name" | tr '/ ' '__').log
    start=$(date +%s)
    "$@" >"$log" 2>&1
    status=$?
    pass=$(grep -c '^ok ' "$log")
    fail=$(grep -c '^not ok ' "$log")
    if [ "$status" -ne 0 ] && [ "$fail" -eq 0 ]; then fail=1; fi
    if [ "$status" -eq 0 ] && [ "$pass" -eq 0 ] && [ "$fail" -eq 0 ]; then
        echo "  $name printed no test result" >>"$log"; fail=1
    fi
    secs=$(( $(date +%s) - start ))
    if [ "$fail" -eq 0 ]; then
        printf 'PASS %-40s %6d ok  (%ss)\n' "$name" "$pass" "$secs"
    else
        printf 'FAIL %-40s %6d ok %4d not ok  (exit %s, log %s)\n' "$name" "$pass" "$fail" "$status" "$log"
        grep -E '^not ok|^#' "$log" | head -n 30 | sed 's/^/    /'
    fi
    total_pass=$((total_pass + pass))
    total_fail=$((total_fail + fail))
}

want() { [ "$suite" = all ] || [ "$suite" = "$1" ]; }

if want unit; then
    for t in "$BUILD"/tests/test_*; do
        [ -x "$t" ] && run_one "unit/$(basename "$t")" "$t"
    done
fi
# Every other folder tests/SUITE/ is a suite of python test programs; files
# whose names start with "_" are modules, not tests.
for dir in tests/*/; do
    suite_name=$(basename "$dir")
    [ "$suite_name" = unit ] && continue
    want "$suite_name" || continue
    for t in "$dir"*.py; do
        [ -f "$t" ] || continue
        case $(basename "$t") in _*) continue ;; esac
        run_one "$suite_name/$(basename "$t" .py)" "$PYTHON" "$t"
    done
done

echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
