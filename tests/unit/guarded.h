/* guarded.h - operand memory against a page that faults, for the unit tests
 * of paths that read operands in place (test_order.c, test_vex.c): a read
 * past an operand's first or last element crashes the test.  Include after
 * <cmocka.h>, <sys/mman.h> and <unistd.h>. */
#ifndef BCGEN_TEST_GUARDED_H
#define BCGEN_TEST_GUARDED_H

/* BYTES of memory with a page that faults right after them (AT_END) or
 * right before them.  The mapping is kept for the next call (mapping and
 * faulting fresh pages each case doubles a test's time). */
typedef struct guarded {
    char *map;
    size_t map_size;
} guarded;

static inline char *guarded_alloc(guarded *gd, size_t bytes, bool at_end)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (!gd->map || gd->map_size - 2 * page < bytes) {
        if (gd->map)
            munmap(gd->map, gd->map_size);
        size_t pages = (bytes + page - 1) / page + 2;
        if (pages < 64)
            pages = 64;
        gd->map_size = pages * page;
        gd->map = mmap(NULL, gd->map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        assert_true(gd->map != MAP_FAILED);
        assert_int_equal(mprotect(gd->map, page, PROT_NONE), 0);
        assert_int_equal(mprotect(gd->map + gd->map_size - page, page, PROT_NONE), 0);
    }
    return at_end ? gd->map + gd->map_size - page - bytes : gd->map + page;
}

static inline void guarded_free(guarded *gd)
{
    if (gd->map)
        munmap(gd->map, gd->map_size);
    gd->map = NULL;
}

#endif
