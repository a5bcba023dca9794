/* fuzz.h - shared by the libFuzzer harnesses tests/fuzz/fuzz_*.c (built by
 * mk/safety.mk into build-fuzz/fuzz/, run by `make fuzz` and, briefly, by
 * tests/safety/test_fuzz.py).  Each harness includes internal.h first
 * (before anything that might define fail()) and this file. */
#ifndef BCGEN_FUZZ_H
#define BCGEN_FUZZ_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a NUL-terminated string (bytes after an embedded NUL are
 * simply not seen, as for any C-string API).  Free with free(). */
static inline char *fuzz_string(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        abort(); /* the harness's own allocation; never bcgen's */
    memcpy(text, data, size);
    text[size] = 0;
    return text;
}

/* A harness found a real bug (not a crash, which the sanitizers catch):
 * a wrong result or a broken promise.  Crash loudly so libFuzzer keeps it. */
#define FUZZ_CHECK(cond)                                                                  \
    do {                                                                                  \
        if (!(cond))                                                                      \
            __builtin_trap();                                                             \
    } while (0)

#endif
