/* fuzz_npy.c - the .npy reader: any bytes as a file (a memfd, so fstat sees
 * a regular file of the input's size) must read or fail with a status and a
 * message; what reads must print (npy_format) and survive a write and a
 * second read unchanged. */
#include "internal.h"
#include "npy.h"

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

static int file = -1;
static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (file < 0) {
        file = memfd_create("fuzz_npy", 0);
        FUZZ_CHECK(file >= 0);
        snprintf(path, sizeof path, "/proc/self/fd/%d", file);
    }
    FUZZ_CHECK(ftruncate(file, 0) == 0);
    FUZZ_CHECK(pwrite(file, data, size, 0) == (ssize_t)size);
    npy_array a;
    bcg_error err;
    error_clear(&err);
    bcg_status s = npy_read(path, &a, &err);
    if (s != BCG_OK) {
        FUZZ_CHECK(err.status == s && err.message[0] && a.data == NULL);
        return 0;
    }
    int64_t elements;
    size_t bytes;
    FUZZ_CHECK(npy_size(&a, &elements, &bytes, &err) == BCG_OK);
    if (bytes <= 1 << 16) {
        strbuf sb;
        sb_init(&sb);
        FUZZ_CHECK(a.data == NULL || npy_format(&sb, &a) == BCG_OK);
        sb_free(&sb);
        FUZZ_CHECK(npy_write(path, &a, &err) == BCG_OK);
        npy_array back;
        FUZZ_CHECK(npy_read(path, &back, &err) == BCG_OK);
        FUZZ_CHECK(back.dtype == a.dtype && back.shape.rank == a.shape.rank);
        FUZZ_CHECK(bytes == 0 || memcmp(back.data, a.data, bytes) == 0);
        npy_free(&back);
    }
    npy_free(&a);
    return 0;
}
