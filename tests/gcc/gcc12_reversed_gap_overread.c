/* gcc12_reversed_gap_overread.c - a second gcc 12.2 wrong-code reduction
 * (evidence, not built by make), found by tests/unit/test_gcc_where.c with
 * operands against a page that faults: an unrolled loop reading an operand
 * backwards with stride -2 loads a vector past the highest element it reads
 * (x[0] here), so the kernel faults when that element ends a mapping.
 * Independent of the expression (a plain copy here; bcgen's a + b too) and
 * not fixed by bcgen yet; the test keeps such operands off the page after
 * them.
 *
 *   gcc (Debian 12.2.0-14+deb12u1) 12.2.0, x86-64:
 *   gcc -O3 -march=x86-64-v3 gcc12_reversed_gap_overread.c && ./a.out  -> SIGSEGV
 *     (T unsigned char, short, int; not double; stride -1 or -3: fine)
 *   ./a.out 1 (the same loop not unrolled), -O2, -O3 without -march,
 *   -fno-tree-loop-vectorize, clang -O3 -march=native              -> ok
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#ifndef T
#define T unsigned char
#endif
#ifndef S
#define S 2
#endif
#define N 136
__attribute__((noipa)) void kern(T *out, const T *x)
{
    for (long j = 0; j < N / 4; j++) {
        out[4 * j] = x[-S * 4 * j];
        out[4 * j + 1] = x[-S * 4 * j - S];
        out[4 * j + 2] = x[-S * 4 * j - 2 * S];
        out[4 * j + 3] = x[-S * 4 * j - 3 * S];
    }
}
__attribute__((noipa)) void kern1(T *out, const T *x)
{
    for (long j = 0; j < N; j++)
        out[j] = x[-S * j];
}
int main(int argc, char **argv)
{
    long page = sysconf(_SC_PAGESIZE);
    char *map = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(map + 3 * page, page, PROT_NONE);
    memset(map, 1, 3 * page);
    T *x = (T *)(map + 3 * page) - 1, out[N]; /* x[0], the highest element read, right before the guard */
    if (argc > 1) kern1(out, x); else kern(out, x);
    printf("ok\n");
    return 0;
}
