/* cli_emit.c - `bcgen emit`: prints or writes the C that bcgen generates
 * for an expression, without compiling it. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: bcgen emit EXPR -i NAME=DTYPE[SHAPE][@[STRIDES]] ... [options]\n"
    "\n"
    "Prints the C kernel bcgen generates for EXPR (or writes it with -o).  The\n"
    "kernel is one function\n"
    "    void FN(void *out, const void *const *in);\n"
    "where in[i] points at element [0,...,0] of operand i (in -i order) and out\n"
    "at the C-contiguous result.  It includes no header and calls only the\n"
    "math functions it names in its prelude.\n"
    "\n"
    "options:\n"
    "  -i NAME=DTYPE[SHAPE]   an operand; @[S0,S1,...] gives strides in elements\n"
    "  --name FN              the function's name (default bcg_kernel)\n"
    "  -o FILE.c              write the source to FILE.c instead of stdout\n"
    "  --unroll full|none|N   full: unroll every element (straight-line code, for\n"
    "                         outputs of up to 65536 elements; larger ones loop);\n"
    "                         none: plain loops; N: unroll the innermost loop N\n"
    "                         times (default 4; outputs of at most 16 elements\n"
    "                         are unrolled fully)\n"
    "  --inplace NAME, --axis K, --strict-rank, --warn-legacy: as for explain\n"
    "\n"
    "example:\n"
    "  bcgen emit 'a * b + c' -i a=f32[5,3,4,1] -i b=f32[3,1,1] -i c=f32[] --name fma3\n";

int cli_emit(int argc, char **argv)
{
    cli_args *args = malloc(sizeof *args);
    if (!args) {
        fprintf(stderr, "bcgen emit: out of memory\n");
        return 1;
    }
    int status = cli_parse_args("emit", help, argc, argv, ARG_OUTPUT | ARG_NAME | ARG_UNROLL,
                                false, args);
    if (status >= 0) {
        free(args);
        return status;
    }
    bcg_operand ops[BCG_MAX_OPERANDS];
    cli_operand_views(args->operand_count, args->operands, ops);
    bcg_error err;
    char *source = NULL;
    if (bcg_emit(args->expr, ops, args->operand_count, &args->options, args->function_name,
                 &source, &err) != BCG_OK) {
        status = cli_report("emit", args->expr, &err);
        free(args);
        return status;
    }
    status = 0;
    if (args->output_path) {
        FILE *f = fopen(args->output_path, "w");
        bool written = f && fputs(source, f) >= 0;
        if (f && fclose(f) != 0)
            written = false;
        if (!written) {
            fprintf(stderr, "bcgen emit: cannot write %s\n", args->output_path);
            status = 1;
        }
    } else {
        fputs(source, stdout);
    }
    bcg_free(source);
    free(args);
    return status;
}
