/* hand.h - bench/hand.c: hand-written loops of the bench cases and the
 * non-temporal bandwidth bound (compiled -O3 -march=native). */
#ifndef BENCH_HAND_H
#define BENCH_HAND_H
#include <stddef.h>

typedef void (*hand_fn)(void *out, const void *const *in);

/* The hand loop of the case NAME, or NULL. */
hand_fn hand_lookup(const char *name);

/* Reads INPUT_BYTES[k] bytes at INPUTS[k] for each of COUNT inputs and
 * writes OUT_BYTES bytes at OUT with streaming (non-temporal) stores. */
void hand_nt_bound(const void *const *inputs, const size_t *input_bytes, int count, void *out,
                   size_t out_bytes);
#endif
