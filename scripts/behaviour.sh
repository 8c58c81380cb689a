#!/usr/bin/env bash
# scripts/behaviour.sh BIN OUTDIR: runs a fixed set of clformer commands (tiny training,
# translate greedy/beam/nbest, average, import + translate + fine-tune, errors)
# on PoCL and writes what they print (stdout, stderr with timings stripped,
# checkpoint hashes) into OUTDIR. Compare two OUTDIRs with diff -r: a
# refactoring should leave them identical (two runs of one binary are).
# OUTDIR is replaced only if it is missing, empty or an earlier output.
set -u
[ $# -eq 2 ] || { echo "usage: scripts/behaviour.sh BIN OUTDIR" >&2; exit 2; }
BIN=$(realpath "$1"); O=$2
if [ -e "$O" ] && [ -n "$(ls -A "$O")" ] && [ ! -f "$O/train.rc" ]; then
    echo "scripts/behaviour.sh: $O holds something else; give a new or earlier output folder" >&2; exit 2
fi
rm -rf "$O"; mkdir -p "$O"; O=$(realpath "$O"); W=$O/work; mkdir -p "$W"
ROOT=$(cd "$(dirname "$0")/.." && pwd); D=$ROOT/data/multi30k; FX=$ROOT/tests/fixtures
export CLF_DEVICE=cpu OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2
zcat $D/test_2016_flickr.en.gz | head -12 > $W/src.en
zcat $D/test_2016_flickr.de.gz | head -12 > $W/ref.de
strip() { sed -E "s|$O|OUT|g; s|$ROOT|ROOT|g" | sed -E 's/"[a-z_]*seconds[a-z_]*": *[0-9.e+-]+/"seconds":T/g' | sed -E 's/[0-9]+(\.[0-9]+)? ?(s|ms|min|sentences\/s|tok\/s|tokens\/s)\b/T/g; s/"(wall|seconds|elapsed|time|ms|tok_per_s|sent_per_s)[a-z_]*": *[0-9.e+-]+/"\1":T/g' ; }
# a safetensors file: the hash of its tensor bytes and its metadata, less times, paths made relative
sthash() { python3 - "$1" "$W" <<'PY'
import sys, json, hashlib, struct, re
p, w = sys.argv[1], sys.argv[2]
b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
meta = {k: v for k, v in h.pop('__metadata__', {}).items() if 'second' not in k and 'time' not in k}
print(p.replace(w + '/', ''), hashlib.sha256(b[8 + n:]).hexdigest()[:16], json.dumps(meta, sort_keys=True).replace(w, 'W'))
PY
}
run() { local name=$1; shift; "$@" > $O/$name.out.raw 2> $O/$name.err.raw; echo "rc=$?" > $O/$name.rc; strip < $O/$name.err.raw > $O/$name.err; sed "s|$O|OUT|g; s|$ROOT|ROOT|g" < $O/$name.out.raw > $O/$name.out; rm $O/$name.err.raw $O/$name.out.raw; }
run train $BIN train --preset tiny --steps 12 --seed 3 --out $W/run --val-every 6 --save-minutes 0 --quiet --max-tokens 1024 --vocab 500
ls $W/run | sort > $O/train.files
for f in $W/run/*.safetensors; do sthash "$f"; done > $O/train.sha
strip < $W/run/log.jsonl > $O/train.log 2>/dev/null
CK=$(ls $W/run/*.safetensors | sort | tail -1)
zcat $D/test_2016_flickr.en.gz | head -300 > $W/src300.en
run tr-300 $BIN translate --model $CK --greedy --max-extra 10 --input $W/src300.en
run tr-greedy $BIN translate --model $CK --greedy --input $W/src.en
run tr-beam $BIN translate --model $CK --input $W/src.en
cp $O/tr-beam.out $W/beam.de
run tr-nbest $BIN translate --model $CK --nbest 3 --input $W/src.en
run tr-stdin sh -c "$BIN translate --model $CK --beam 2 < $W/src.en"
run e-avgdir $BIN average -o $W/nodir/avg.safetensors --dir $W/run --last 2
mkdir -p $W/avg $W/ftavg
run avg $BIN average -o $W/avg/avg.safetensors --dir $W/run --last 2
run avg-beam $BIN translate --model $W/avg/avg.safetensors --input $W/src.en
run bleu sh -c "$BIN bleu $W/ref.de < $W/beam.de"
run import $BIN import $FX/marian/relu_separate -o $W/imp
run imp-tr $BIN translate --model $W/imp/model.safetensors --input $W/src.en
run ft $BIN train --init $W/imp/model.safetensors --steps 4 --seed 1 --out $W/ft --val-every 0 --quiet --max-tokens 512
for f in $W/ft/*.safetensors; do sthash "$f"; done > $O/ft.sha
run ftavg $BIN average -o $W/ftavg/a.safetensors --dir $W/ft
run ftavg-tr $BIN translate --model $W/ftavg/a.safetensors --input $W/src.en
run data $BIN data --max-tokens 1024
# errors
run e-missing $BIN translate --model /nonexistent.safetensors
head -c 1000 $CK > $W/trunc.safetensors
run e-trunc $BIN translate --model $W/trunc.safetensors --input $W/src.en
run e-flag $BIN train --no-such-flag
run e-beam $BIN translate --model $CK --beam 0 --input $W/src.en
run e-dev $BIN translate --model $CK --device nosuchdevice --input $W/src.en
run e-maxtok $BIN train --preset tiny --max-tokens 3 --steps 1 --out $W/e1 --quiet --vocab 500 --val-every 0
run e-avg $BIN average -o $W/x.safetensors $CK $W/imp/model.safetensors
printf 'a\xffb\n' > $W/bad.en
run e-utf8 $BIN translate --model $CK --input $W/bad.en
run e-lines $BIN train --src $W/src.en --tgt $FX/bleu/ref.de --steps 1 --out $W/e2 --quiet
run e-gemm $BIN translate --model $CK --gemm nosuch --input $W/src.en
rm -rf "$W"
