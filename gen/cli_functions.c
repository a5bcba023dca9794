/* cli_functions.c - `bcgen functions`: every function and operator of the
 * expression language with its signature and typing rule, generated from
 * the operator table (gen/ops.h), so the list cannot drift from what the
 * parser accepts. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: bcgen functions [--json] [--tiles]\n"
    "\n"
    "Lists every function bcgen's expressions accept, with its parameters and\n"
    "how its result is typed, then the operators, from the operator table\n"
    "(gen/ops.h).  Meanings at the edges are in docs/semantics.md.\n"
    "\n"
    "--tiles: for every row of the table and every dtype, whether a JIT kernel\n"
    "computes it with the vectorised microkernels (T), with tcc's per-element\n"
    "code (-, 5 to 50 times slower), or the row does not type on that dtype (.).\n";

/* `--tiles`: the coverage table (tile_coverage, coverage.c), a row per
 * operator and a column per dtype. */
static int print_tiles(void)
{
    bcg_context *ctx = bcg_context_new();
    if (!ctx) {
        fprintf(stderr, "bcgen functions: out of memory\n");
        return 1;
    }
    printf("microkernels (T: vectorised tiles, -: per-element code, .: not typed):\n");
    printf("  %-12s", "");
    for (int d = 0; d < BCG_DTYPE_COUNT; d++)
        printf(" %4s", bcg_dtype_name((bcg_dtype)d));
    printf("\n");
    int scalar = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        if (op == OP_OPERAND || op == OP_LITERAL || op == OP_CAST)
            continue;
        printf("  %-12s", op_table[op].word);
        for (int d = 0; d < BCG_DTYPE_COUNT; d++) {
            tile_cover cover = tile_coverage(ctx, (expr_op)op, (bcg_dtype)d, NULL, 0);
            scalar += cover == COVER_SCALAR || cover == COVER_FAILED;
            printf(" %4s", cover == COVER_TILED ? "T" : cover == COVER_UNTYPED ? "." : "-");
        }
        printf("\n");
    }
    printf("%d row and dtype pairs take the per-element code\n", scalar);
    bcg_context_free(ctx);
    return 0;
}

/* How a row's result is typed, in a few words. */
static const char *rule_text(op_rule rule)
{
    switch (rule) {
    case RULE_FLOAT: return "float (floats kept; bool, 8-bit ints f16; 16-bit f32; 32/64-bit f64)";
    case RULE_SAME: return "the argument's type";
    case RULE_PROMOTE: return "the arguments promoted (NumPy's result_type, weak literals)";
    case RULE_WHERE: return "x and y promoted; c is read as bool";
    case RULE_COMPARE: return "bool";
    case RULE_LOGICAL: return "bool";
    case RULE_NOT: return "bool";
    case RULE_FLOAT_TEST: return "bool (the argument taken as a float)";
    case RULE_ROUND: return "integers keep their type; floats kept, bool f16";
    case RULE_DIVIDE: return "float (integers divide in f64)";
    case RULE_INTEGRAL: return "the arguments promoted (i8 for bool)";
    case RULE_CAST: return "the named dtype";
    case RULE_SATURATE: return "the arguments promoted, an integer type (clamped to its range)";
    case RULE_FIXED: return "Q7: i8, Q15: i16, Q31: i32, the type its arguments must have";
    default: return "";
    }
}

int cli_functions(int argc, char **argv)
{
    bool json = false, tiles = false;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(help, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
            continue;
        }
        if (strcmp(argv[i], "--tiles") == 0) {
            tiles = true;
            continue;
        }
        fprintf(stderr, "bcgen functions: unknown argument '%s'\n(see bcgen functions --help)\n",
                argv[i]);
        return 2;
    }
    if (tiles)
        return print_tiles();
    if (json)
        printf("{\"functions\": [");
    else
        printf("functions:\n");
    bool first = true;
    for (int op = 0; op < OP_COUNT; op++) {
        const op_info *row = &op_table[op];
        if (!row->call)
            continue;
        if (json) {
            printf("%s{\"name\": ", first ? "" : ", ");
            cli_json_string(stdout, row->call);
            printf(", \"params\": ");
            cli_json_string(stdout, row->params);
            printf(", \"result\": ");
            cli_json_string(stdout, rule_text(row->rule));
            printf(", \"libm\": ");
            if (row->math)
                cli_json_string(stdout, row->math);
            else
                printf("null");
            printf(", \"vectorised\": %s}", row->tile ? "true" : "false");
        } else {
            char signature[64];
            snprintf(signature, sizeof signature, "%s(%s)", row->call, row->params);
            printf("  %-22s %s", signature, rule_text(row->rule));
            if (strcmp(row->call, row->symbol) != 0) /* also an operator: pow is ** */
                printf(row->arity == 1 ? "; also %sx" : "; also x %s y", row->symbol);
            printf("\n");
        }
        first = false;
    }
    if (json) {
        printf("], \"casts\": [");
        for (int d = 0; d < BCG_DTYPE_COUNT; d++)
            printf("%s\"%s\"", d ? ", " : "", bcg_dtype_name((bcg_dtype)d));
        printf("], \"operators\": [");
        first = true;
        for (int op = 0; op < OP_COUNT; op++) {
            const op_info *row = &op_table[op];
            if ((row->call && strcmp(row->call, row->symbol) == 0) || op == OP_OPERAND ||
                op == OP_LITERAL || op == OP_CAST)
                continue;
            printf("%s", first ? "" : ", ");
            cli_json_string(stdout, row->symbol);
            first = false;
        }
        printf("]}\n");
        return 0;
    }
    printf("  %-22s the named dtype (", "DTYPE(x)");
    for (int d = 0; d < BCG_DTYPE_COUNT; d++)
        printf("%s%s", d ? ", " : "", bcg_dtype_name((bcg_dtype)d));
    printf(")\naliases:");
    const char *function, *alias;
    for (size_t i = 0; (alias = expr_function_alias(i, &function)); i++)
        printf("%s %s = %s", i ? "," : "", alias, function);
    printf("\noperators:\n ");
    for (int op = 0; op < OP_COUNT; op++) {
        const op_info *row = &op_table[op];
        if ((!row->call || strcmp(row->call, row->symbol) != 0) && op != OP_OPERAND &&
            op != OP_LITERAL && op != OP_CAST)
            printf(" %s", row->symbol);
    }
    printf("\n");
    return 0;
}
