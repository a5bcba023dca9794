#!/bin/sh
# make demo: the main job on the seeds' own example, (5,3,4,1) + (3,1,1).
set -e
BCGEN=${1:-build/bcgen}
show() { printf '\n$ %s\n' "$*"; "$@"; }
echo "bcgen demo: a * b + c with a=f32[5,3,4,1], b=f32[3,1,1], c=f32[]"
show "$BCGEN" shape 5,3,4,1 3,1,1
show "$BCGEN" explain 'a * b + c' -i 'a=f32[5,3,4,1]' -i 'b=f32[3,1,1]' -i 'c=f32[]'
show "$BCGEN" emit 'a * b + c' -i 'a=f32[5,3,4,1]' -i 'b=f32[3,1,1]' -i 'c=f32[]' --name fma3
show "$BCGEN" run 'a * b + c' -i 'a=f32[5,3,4,1]=range' -i 'b=f32[3,1,1]=range' -i 'c=f32[]=ones' --time
echo
echo "and a broadcast error, reported with operands, shapes and the dimension:"
show "$BCGEN" shape 5,2,4,1 3,1,1 || true
