/* fuzz_spec.c - the text forms of shapes and operands: the CLI's operand
 * spec parser (NAME=DTYPE[SHAPE][@[STRIDES]][=SOURCE], gen/cli.c) in both
 * modes, and shape_parse, which must agree with shape_format on what it
 * accepts (formatting a parsed shape and parsing it again is the same shape). */
#include "internal.h"
#include "cli.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_string(data, size);
    cli_operand op;
    bcg_error err;
    for (int want_source = 0; want_source < 2; want_source++) {
        error_clear(&err);
        bcg_status s = cli_parse_operand(text, want_source, &op, &err);
        if (s == BCG_OK) {
            FUZZ_CHECK(name_is_valid(op.name, strlen(op.name)));
            FUZZ_CHECK(op.shape.rank >= 0 && op.shape.rank <= BCG_MAX_RANK);
            FUZZ_CHECK(!want_source == !op.source);
        } else {
            FUZZ_CHECK(err.status == s && err.message[0]);
        }
    }
    shape parsed;
    error_clear(&err);
    if (shape_parse(text, strlen(text), &parsed, &err) == BCG_OK) {
        char printed[BCG_MAX_RANK * 24 + 8];
        shape_format(&parsed, printed, sizeof printed);
        shape again;
        FUZZ_CHECK(shape_parse(printed, strlen(printed), &again, &err) == BCG_OK);
        FUZZ_CHECK(again.rank == parsed.rank);
        for (int d = 0; d < parsed.rank; d++)
            FUZZ_CHECK(again.dims[d] == parsed.dims[d]);
    }
    free(text);
    return 0;
}
