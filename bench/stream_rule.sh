#!/bin/sh
# stream_rule.sh - bench/stream_rule over output sizes (MiB), dtypes and
# in/out ratios; one line per case (see stream_rule.c for the columns).
#   bench/stream_rule.sh [BINARY] [SIZES...]
B=${1:-build/bench/stream_rule}
shift 2>/dev/null
SIZES=${*:-4 8 12 16 20 24 32 40 48 64 128 256}
for s in $SIZES; do
  e32=$((s * 262144)); e64=$((s * 131072)); e8=$((s * 1048576))
  $B 'a + 0.1' "a=f32[$((e32 / 1024)),1024]" --rounds 9
  $B 'a + b' "a=f32[$((e32 / 1024)),1024] b=f32[$((e32 / 1024)),1024]" --rounds 9
  $B 'a + b' "a=f32[$((e32 / 4096)),1] b=f32[1,4096]" --rounds 9
  $B 'a + b' "a=f32[$((e32 / 1024)),1024] b=f32[1024]" --rounds 9
  $B 'a * b' "a=f64[$((e64 / 1024)),1024] b=f64[$((e64 / 1024)),1024]" --rounds 9
  $B 'a + b' "a=u8[$((e8 / 1024)),1024] b=u8[1024]" --rounds 9
  $B 'where(a > 0.0, a, 0.1)' "a=f32[$((e32 / 1024)),1024]" --rounds 9
  $B '(0.5) / (a)' "a=f64[$((e64 / 1024)),1024]" --rounds 9
done
