/* test_jit_wx.c - no page of the process is ever writable and executable
 * at once, during compiles as well as after them (issue 9, finding 8).
 *
 * Two independent checks over thousands of distinct compiles:
 *  - this executable defines mprotect (it interposes on glibc's) and counts
 *    every request for write and execute together, whoever makes it: before
 *    the fix, libtcc's tcc_relocate asked for read+write+execute on every
 *    kernel's code;
 *  - a thread reads /proc/self/maps in a loop while the compiles run and
 *    counts mappings whose permissions are rwx (the report saw 718 in 20,000
 *    scans).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

#include <cmocka.h>

static long wx_requests;
static long mprotect_calls;

int mprotect(void *address, size_t length, int protection)
{
    __atomic_add_fetch(&mprotect_calls, 1, __ATOMIC_RELAXED);
    if ((protection & PROT_WRITE) && (protection & PROT_EXEC))
        __atomic_add_fetch(&wx_requests, 1, __ATOMIC_RELAXED);
    return (int)syscall(SYS_mprotect, address, length, protection);
}

typedef struct scanner {
    volatile int stop;
    long scans, rwx_seen;
    char first[512];
} scanner;

static void *scan_maps(void *arg)
{
    scanner *s = arg;
    char line[512];
    while (!s->stop) {
        FILE *f = fopen("/proc/self/maps", "r");
        if (!f)
            break;
        while (fgets(line, sizeof line, f)) {
            char *perms = strchr(line, ' ');
            if (perms && strncmp(perms + 1, "rwx", 3) == 0) {
                if (s->rwx_seen++ == 0)
                    snprintf(s->first, sizeof s->first, "%s", line);
            }
        }
        fclose(f);
        s->scans++;
    }
    return NULL;
}

static void test_no_writable_executable_page(void **state)
{
    (void)state;
    enum { KERNELS = 3000 };
    scanner s = {0};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, scan_maps, &s), 0);
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    static const char *const forms[] = {"a * %d + b", "where(a > %d, a, b)", "sqrt(a) + %d",
                                        "a // (b + %d)"};
    for (int i = 0; i < KERNELS; i++) {
        char expr[64];
        snprintf(expr, sizeof expr, forms[i % 4], i);
        int64_t shape[] = {1 + i % 37, 3 + i % 5};
        bcg_operand ops[] = {{"a", i % 2 ? BCG_F32 : BCG_I32, 2, shape, NULL},
                             {"b", BCG_F64, 1, shape + 1, NULL}};
        bcg_kernel *k;
        bcg_error err;
        if (bcg_compile(ctx, expr, ops, 2, NULL, &k, &err) != BCG_OK)
            fail_msg("%s: %s", expr, err.message);
        assert_string_equal(bcg_kernel_note(k), "");
        if (i % 500 == 499) { /* free kernels too: unmapped code, new mappings */
            bcg_context_free(ctx);
            ctx = bcg_context_new();
            assert_non_null(ctx);
        }
    }
    bcg_context_free(ctx);
    s.stop = 1;
    pthread_join(thread, NULL);
    print_message("# %d compiles, %ld mprotect calls, %ld maps scans, %ld rwx mappings seen\n",
                  KERNELS, mprotect_calls, s.scans, s.rwx_seen);
    if (s.rwx_seen)
        fail_msg("an rwx mapping was seen: %s", s.first);
    assert_int_equal(wx_requests, 0);
    assert_true(mprotect_calls >= KERNELS); /* the interposition saw the compiles */
    assert_true(s.scans > 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_writable_executable_page),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
