/* cli.h - the bcgen command line.  main() in cli.c dispatches to one
 * function per command, each in its own file (cli_shape.c, ...).  Each
 * command gets argv with argv[0] = the command name and returns the exit
 * status: 0 success, 1 a broadcast/type/compile error, 2 a usage or parse
 * error.  Messages go to stderr as "bcgen CMD: message". */
#ifndef BCGEN_CLI_H
#define BCGEN_CLI_H

#include <stdio.h>

#include "internal.h"

int cli_shape(int argc, char **argv);   /* cli_shape.c */
int cli_explain(int argc, char **argv); /* cli_explain.c */
int cli_emit(int argc, char **argv);    /* cli_emit.c */
int cli_run(int argc, char **argv);     /* cli_run.c */
int cli_aot(int argc, char **argv);     /* cli_aot.c */
int cli_cache(int argc, char **argv);   /* cli_cache.c */
int cli_functions(int argc, char **argv); /* cli_functions.c */

/* The MISRA C:2012 deviation record (Markdown) of the pair SOURCE/HEADER,
 * named SOURCE_NAME and HEADER_NAME, appended to SB; false when out of
 * memory (cli_misra.c). */
bool misra_record(strbuf *sb, const char *source_name, const char *header_name,
                  const char *source, const char *header);

/* ---- helpers in cli.c ---- */

/* -i NAME=DTYPE[SHAPE][@[STRIDES]][=SOURCE] */
typedef struct cli_operand {
    char name[BCG_MAX_NAME + 1];
    bcg_dtype dtype;
    shape shape;
    int64_t strides[BCG_MAX_RANK];
    bool has_strides;
    const char *source;          /* after the last '=', or NULL */
} cli_operand;

/* Parses one operand spec; WANT_SOURCE: "=SOURCE" is required (run) or
 * rejected (explain, emit). */
bcg_status cli_parse_operand(const char *spec, bool want_source, cli_operand *out,
                             bcg_error *err);
/* Fills bcg_operand views of cli_operands (pointers into them). */
void cli_operand_views(int count, const cli_operand *in, bcg_operand *out);
/* --out-strides S, --out-dtype D, --reduce OP with --out-shape SHAPE or
 * --to NAME: the output description of one kernel (explain, emit, run, and
 * each kernel of aot). */
typedef struct cli_output {
    bcg_output output;
    int64_t strides[BCG_MAX_RANK];
    int strides_count;         /* -1: not given */
    shape shape;               /* --out-shape, or --to's operand's */
    const char *to;
    bool has_shape, given;
} cli_output;
void cli_output_init(cli_output *o);
/* ARG (with VALUE) when it is an output option: 1 (VALUE consumed), 0 when
 * ARG is not one, 2 after printing a usage error for CMD. */
int cli_output_option(const char *cmd, const char *arg, const char *value, cli_output *o);
/* Checks O against the kernel's operands and points OPTIONS->output at
 * it when anything was given: -1 to go on, else the exit status. */
int cli_output_finish(const char *cmd, cli_output *o, const cli_operand *operands, int count,
                      bcg_options *options);

/* The arguments explain, emit and run share. */
enum {
    ARG_JSON = 1, ARG_OUTPUT = 2, ARG_NAME = 4, ARG_TIME = 8, ARG_REFERENCE = 16,
    ARG_UNROLL = 32,
    ARG_COMPILE = 64, /* --stream, --backend, --native: options of bcg_compile */
    ARG_THREADS = 128, ARG_JIT = 256,
    ARG_STREAM = 512  /* --stream alone (explain: the JIT form it gives) */
};
typedef struct cli_args {
    const char *expr;
    int operand_count;
    cli_operand operands[BCG_MAX_OPERANDS];
    bcg_options options;
    const char *output_path;   /* -o FILE */
    const char *function_name; /* --name FN */
    bool json, time, reference;
    bool jit;                  /* --jit: bcg_compile's source (emit) */
    int threads;               /* --threads N: bcg_run_threads (run); 1 by default */
    cli_output out;            /* options.output points into it when given */
    /* the output options and -o in the order given, applied once the
     * expression is known: to `out` and output_path for an expression, or
     * keyed by statement (-o NAME=FILE, --out-dtype NAME=D, ...) for a
     * program of statements (program.c) */
    int raw_count;
    struct { const char *arg, *value; } raw[4 * BCG_MAX_OUTPUTS];
    bool program;              /* the expression is a program of statements */
    int output_count;          /* program: its statements */
    char output_names[BCG_MAX_OUTPUTS][BCG_MAX_NAME + 1];
    cli_output outs[BCG_MAX_OUTPUTS];
    const char *output_paths[BCG_MAX_OUTPUTS];
    bcg_output outputs[BCG_MAX_OUTPUTS]; /* options.outputs points at them */
} cli_args;
/* Parses EXPR -i SPEC... [--inplace NAME] [--axis K] [--strict-rank]
 * [--warn-legacy] [--out-strides S] [--out-dtype D] [--reduce OP --out-shape SHAPE |
 * --to NAME] and the flags in ALLOWED.  Returns -1 when the command
 * should go on, otherwise the exit status (after printing help or the
 * error).  HELP is the command's --help text. */
int cli_parse_args(const char *cmd, const char *help, int argc, char **argv, unsigned allowed,
                   bool want_source, cli_args *args);

/* ---- the spec file of `bcgen aot --spec` (cli_spec.c, docs/spec.md) ---- */

/* A spec file read into the command line it stands for: ARGV[0, ARGC)
 * (NULL-terminated) are option words ("-k", "scale=x * g", ...), each
 * from LINE[i]:COLUMN[i] of the file; for a -k value EXPR_COLUMN[i] is
 * the column of the expression's first character (else 0).  All owned. */
typedef struct cli_spec {
    int argc;
    char **argv;
    int *line, *column, *expr_column;
} cli_spec;
/* Parses TEXT[0, LENGTH), the spec file FILE (the name is only for
 * messages).  false: ERROR holds "FILE:LINE:COLUMN: message" and SPEC is
 * empty.  Never reads or writes anything else. */
bool cli_spec_parse(const char *file, const char *text, size_t length, cli_spec *spec,
                    char *error, size_t error_cap);
void cli_spec_free(cli_spec *spec);

/* Exit status for a library status: 2 for usage/shape-text/parse, 1 otherwise. */
int cli_exit_status(bcg_status status);
/* Prints "bcgen CMD: message" (and a caret line under the expression for
 * errors with a column) to stderr; returns cli_exit_status(err->status). */
int cli_report(const char *cmd, const char *expr, const bcg_error *err);
/* Writes S as a JSON string literal (quotes and escapes included). */
void cli_json_string(FILE *f, const char *s);
/* true when argv[i] is -h or --help */
bool cli_is_help(const char *arg);

#endif
