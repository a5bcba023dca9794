/* npy_tool.c - a small driver over gen/npy.c for tests/diff/npy_numpy.py,
 * which builds it itself:
 *   gcc -std=c11 -D_GNU_SOURCE -Igen tests/unit/npy_tool.c gen/npy.c gen/util.c gen/dtype.c -lm
 *
 *   npy_tool copy IN OUT [IN OUT ...]      npy_read then npy_write; one line per pair:
 *                                          "ok" or "error STATUS: message"
 *   npy_tool print FILE...                 npy_format of each file, each followed by
 *                                          a line "<<<end>>>" (or "error STATUS: message")
 *   npy_tool fill DTYPE DIMS SOURCE OUT    npy_fill (DIMS "3,4", "" for rank 0) then npy_write
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"

static void report(bcg_status status, const bcg_error *err)
{
    if (status == BCG_OK)
        printf("ok\n");
    else
        printf("error %d: %s\n", (int)status, err->message);
}

static int copy(int count, char **paths)
{
    for (int i = 0; i + 1 < count; i += 2) {
        bcg_error err;
        error_clear(&err);
        npy_array a;
        bcg_status status = npy_read(paths[i], &a, &err);
        if (status == BCG_OK)
            status = npy_write(paths[i + 1], &a, &err);
        npy_free(&a);
        report(status, &err);
    }
    return 0;
}

static int print(int count, char **paths)
{
    for (int i = 0; i < count; i++) {
        bcg_error err;
        error_clear(&err);
        npy_array a;
        bcg_status status = npy_read(paths[i], &a, &err);
        if (status != BCG_OK) {
            report(status, &err);
            continue;
        }
        strbuf sb;
        sb_init(&sb);
        status = npy_format(&sb, &a);
        npy_free(&a);
        if (status != BCG_OK) {
            printf("error %d: npy_format failed\n", (int)status);
        } else {
            fwrite(sb.data, 1, sb.len, stdout);
            printf("\n<<<end>>>\n");
        }
        sb_free(&sb);
    }
    return 0;
}

static int fill(char **argv)
{
    npy_array a;
    memset(&a, 0, sizeof a);
    if (!dtype_from_text(argv[0], (size_t)-1, &a.dtype)) {
        fprintf(stderr, "npy_tool: unknown dtype %s\n", argv[0]);
        return 2;
    }
    for (const char *p = argv[1]; *p;) {
        char *end;
        long long size = strtoll(p, &end, 10);
        if (end == p || (*end && *end != ',') || a.shape.rank >= BCG_MAX_RANK) {
            fprintf(stderr, "npy_tool: bad dims %s\n", argv[1]);
            return 2;
        }
        a.shape.dims[a.shape.rank++] = size;
        p = *end ? end + 1 : end;
    }
    bcg_error err;
    error_clear(&err);
    bcg_status status = npy_fill(&a, argv[2], &err);
    if (status == BCG_OK)
        status = npy_write(argv[3], &a, &err);
    npy_free(&a);
    report(status, &err);
    return status == BCG_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "copy") == 0)
        return copy(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "print") == 0)
        return print(argc - 2, argv + 2);
    if (argc == 6 && strcmp(argv[1], "fill") == 0)
        return fill(argv + 2);
    fprintf(stderr, "usage: npy_tool copy IN OUT... | print FILE... | fill DTYPE DIMS SOURCE OUT\n");
    return 2;
}
