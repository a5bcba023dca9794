/* fuzz_specfile.c - the spec file of `bcgen aot --spec` (gen/cli_spec.c,
 * docs/spec.md): any bytes are either read into option words or refused
 * with a "FILE:LINE:COLUMN: message" inside the text; the words come in
 * option/value pairs the aot parser knows, each placed on a line of the
 * input, and nothing leaks (ASan). */
#include "internal.h"
#include "cli.h"

#include "fuzz.h"

static bool is_option(const char *word)
{
    static const char *const options[] = {
        "-k", "-i", "--inplace", "--axis", "--strict-rank", "--out-strides", "--out-dtype",
        "--reduce", "--out-shape", "--to", "--unroll", "--math", "--restrict", "--index-bits",
    };
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
        if (strcmp(word, options[i]) == 0)
            return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    cli_spec spec;
    char error[600];
    bool ok = cli_spec_parse("f.bcg", (const char *)data, size, &spec, error, sizeof error);
    if (!ok) {
        int line = 0, column = 0;
        FUZZ_CHECK(sscanf(error, "f.bcg:%d:%d: ", &line, &column) == 2);
        FUZZ_CHECK(line >= 1 && line <= lines && column >= 1);
        FUZZ_CHECK(spec.argc == 0 && spec.argv == NULL);
        return 0;
    }
    FUZZ_CHECK(spec.argc >= 2 && spec.argv[spec.argc] == NULL);
    FUZZ_CHECK(strcmp(spec.argv[0], "-k") == 0 || is_option(spec.argv[0]));
    bool kernel = false;
    for (int i = 0; i < spec.argc; i++) {
        const char *word = spec.argv[i];
        FUZZ_CHECK(spec.line[i] >= 1 && spec.line[i] <= lines && spec.column[i] >= 1);
        if (!is_option(word))
            continue;
        kernel |= strcmp(word, "-k") == 0;
        if (strcmp(word, "--strict-rank") == 0 || strcmp(word, "--restrict") == 0)
            continue;
        /* a value follows, placed on the option's line */
        FUZZ_CHECK(i + 1 < spec.argc && spec.line[i + 1] == spec.line[i]);
        const char *value = spec.argv[i + 1];
        FUZZ_CHECK(value[0] != 0 && value[0] != ' ' && value[strlen(value) - 1] != ' ');
        if (strcmp(word, "-k") == 0 || strcmp(word, "-i") == 0) {
            const char *eq = strchr(value, '=');
            FUZZ_CHECK(eq && name_is_valid(value, (size_t)(eq - value)));
        }
        if (strcmp(word, "-k") == 0)
            FUZZ_CHECK(spec.expr_column[i + 1] > spec.column[i + 1]);
        i++;
    }
    FUZZ_CHECK(kernel);
    cli_spec_free(&spec);
    return 0;
}
