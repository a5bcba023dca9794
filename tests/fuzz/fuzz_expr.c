/* fuzz_expr.c - the expression parser and typer: any bytes, as expression
 * text over four operands (a f32, b i32, c bool, d u8), must parse or fail
 * with a status, a message and - for parse errors - a column inside the
 * text; a parsed tree must type or fail the same way, and print.  The first
 * byte, when it is not printable, picks other dtypes for the operands. */
#include "internal.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bcg_dtype dtypes[4] = {BCG_F32, BCG_I32, BCG_BOOL, BCG_U8};
    if (size > 0 && data[0] >= 0x80) {
        for (int i = 0; i < 4; i++)
            dtypes[i] = (bcg_dtype)((data[0] >> i) % BCG_DTYPE_COUNT);
        data++;
        size--;
    }
    char *text = fuzz_string(data, size);
    static const char *const names[] = {"a", "b", "c", "d"};
    expr_names table = {4, names};
    arena *a = arena_new();
    FUZZ_CHECK(a != NULL);
    bcg_error err;
    error_clear(&err);
    expr_node *root = NULL;
    bcg_status s = expr_parse(a, text, &table, &root, &err);
    if (s == BCG_OK) {
        FUZZ_CHECK(root != NULL);
        s = expr_type(a, root, dtypes, 4, &err);
        if (s == BCG_OK) {
            strbuf sb;
            sb_init(&sb);
            expr_format(&sb, root, &table);
            expr_dump(&sb, root, &table);
            FUZZ_CHECK(!sb.failed);
            sb_free(&sb);
        }
    }
    if (s != BCG_OK) {
        FUZZ_CHECK(err.status == s && err.message[0]);
        if (s == BCG_ERR_PARSE)
            FUZZ_CHECK(err.column >= 1 && (size_t)err.column <= strlen(text) + 1);
    }
    arena_free(a);
    free(text);
    return 0;
}
