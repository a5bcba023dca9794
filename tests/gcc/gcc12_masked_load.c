/* gcc12_masked_load.c - a gcc 12.2 wrong-code reduction (evidence, not built
 * by make).  Found through bcgen's plain C (the cc backend and the AOT .c):
 * where(b != 3.0, minimum(c, a), b) with b read backwards.
 *
 *   gcc (Debian 12.2.0-14+deb12u1) 12.2.0, x86-64:
 *   gcc -O3 -march=x86-64-v3 gcc12_masked_load.c && ./a.out   -> bad 38, exit 1
 *   same with -march=x86-64-v4 or -march=native (AVX-512)      -> bad 38
 *   -O2, -O3 without -march, -fno-tree-loop-vectorize,
 *   -fno-tree-loop-if-convert, clang -O3 -march=native          -> bad 0
 *
 * The trigger: a loop whose body has two (or more) statements (bcgen's
 * unrolled groups), each a ?: whose condition loads an operand read with a
 * negative stride and one of whose sides is a load.  If-conversion makes the
 * side a masked load (vmaskmovpd / AVX-512 masked move); the group's mask is
 * computed from the reversed condition load and the loaded lanes come out
 * permuted (element i gets x[i + 2]).  Here one statement per iteration, a
 * positive stride, or a side that is not a load (a constant, x + 1 in float)
 * is right; test_gcc_where's random cases also hit it with forward strides
 * only (where(b > 2, a, 3) on i64 [2,110], b's rows 111 apart, unrolled by
 * 7) and with `c || y[j]` (the AOT form's ||).  Every dtype is hit: f64,
 * f32, i64, i32 with AVX2; i16 and i8 with AVX-512 (masked loads of narrow
 * elements).
 *
 * bcgen's way round (gen/cexpr.c put_select): in the forms gcc compiles a
 * where is a call bcg_select_T(c, x, y), so both sides are plain arguments
 * evaluated before the choice; no masked load remains and gcc still
 * vectorises it (a blend).  Replacing the ?: below by such a call, or
 * loading x[j] and r[s] into locals before the ?:, gives bad 0.
 * tests/unit/test_gcc_where.c checks bcgen's emitted C against it. */
#include <stdio.h>

#define N 96

__attribute__((noipa)) static void kernel(double *out, const double *x, const double *r)
{
    for (long i = 0; i < N / 2; i++) {
        out[2 * i] = r[-2 * i] != 3 ? x[2 * i] : r[-2 * i];
        out[2 * i + 1] = r[-2 * i - 1] != 3 ? x[2 * i + 1] : r[-2 * i - 1];
    }
}

int main(void)
{
    double x[N], r[N], out[N];
    long bad = 0;
    for (int i = 0; i < N; i++) {
        x[i] = 10 + i;
        r[i] = i % 5;
    }
    kernel(out, x, r + N - 1);
    for (int i = 0; i < N; i++) {
        double c = r[N - 1 - i];
        if (out[i] != (c != 3 ? x[i] : c))
            bad++;
    }
    printf("bad %ld\n", bad);
    return bad != 0;
}
