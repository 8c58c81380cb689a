#!/usr/bin/env bash
# compute_types.sh: clformer's `translate` against CTranslate2 on the same
# weights, every compute type, alternating rounds, one sitting: sentences/s
# of each round, their means and the ratios of means, and each output's BLEU.
#
#   bench/compute_types.sh CKPT [--rounds N] [--input SRC] [--ref REF] [--device D]
#                          [--types "float32 int8 bfloat16"] [--out DIR]
#
# CKPT: a float32 clformer checkpoint with its bpe.model beside it (the main
# job's runs/main/average.safetensors). Defaults: 2 rounds, test_2016_flickr,
# the default device, float32 int8 bfloat16 (CTranslate2 has no bfloat16 on
# CPUs and is run for the types it has). Each round runs, for each type,
# ours with beam 4 and greedy, float32 once more on the host's OpenBLAS
# (CLF_GEMM_PACK=off, the unpacked baseline), then CTranslate2 4.x
# (bench/peers/ct2_peer.py, 2 threads, THREADS to change) on the same
# weights. CTranslate2's translate calls are timed, after a warm-up batch,
# its loading not; ours both ways: the whole command (loading 0.3 s, some
# 3-8% of a 1000-sentence run, included) and the command's own count of
# its translate call (loading, reading and encoding the input left out). Needs /usr/bin/python3 with
# ctranslate2, safetensors, sentencepiece (bench/peers/README.md). Outputs
# go to DIR (default a temporary folder): the hypotheses and run.log.
# Time it on a quiet machine only.
set -euo pipefail
cd "$(dirname "$0")/.."
CLF=${CLF:-build/clformer}
rounds=2 src=data/multi30k/test_2016_flickr.en.gz ref=data/multi30k/test_2016_flickr.de.gz device="" out=""
types="float32 int8 bfloat16"
ckpt=${1:?usage: bench/compute_types.sh CKPT [--rounds N] [--input SRC] [--ref REF] [--device D] [--types T] [--out DIR]}
shift
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --input) src=$2; shift 2 ;;
    --ref) ref=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "compute_types.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "compute_types.sh: --rounds wants a count, not '$rounds'" >&2; exit 2; }
for f in "$ckpt" "$src" "$ref" "$CLF"; do
    [ -e "$f" ] || { echo "compute_types.sh: $f does not exist" >&2; exit 1; }
done
out=${out:-$(mktemp -d)}
mkdir -p "$out"
lines=$(python3 -c 'import gzip, sys; print(sum(1 for _ in (gzip.open if sys.argv[1].endswith(".gz") else open)(sys.argv[1], "rt")))' "$src")
declare -A rate  # "who type search" -> the rounds' sentences/s

bleu() { "$CLF" bleu "$ref" -i "$1" -m bleu -f text 2>/dev/null | sed -E 's/^[^=]*= ([0-9.]+) .*/\1/'; }

ours() { # KEY TYPE ENV SEARCH
    local key=$1 type=$2 env=$3 search=$4 args=() t0 t1 hyp=$out/ours-$1-$4.txt
    [ "$search" = greedy ] && args+=(--greedy)
    [ -n "$device" ] && args+=(--device "$device")
    t0=$(date +%s.%N)
    env $env "$CLF" translate --model "$ckpt" --input "$src" --compute-type "$type" "${args[@]}" > "$hyp" 2> "$hyp.err"
    t1=$(date +%s.%N)
    rate["ours $key $search"]+=" $(awk -v a="$t0" -v b="$t1" -v n="$lines" 'BEGIN {printf "%.1f", n / (b - a)}')"
    # its own count of the translate call alone, as CTranslate2's is timed
    rate["calls $key $search"]+=" $(sed -nE 's/.*translated [0-9]+ sentences in [0-9.]+ s: ([0-9.]+) sentences.*/\1/p' "$hyp.err")"
}

peer() { # TYPE
    local line
    while read -r line; do
        local beam sps
        beam=$(sed -E 's/.*"beam": ([0-9]+).*/\1/' <<< "$line")
        sps=$(sed -E 's/.*"sentences_per_s": ([0-9.]+).*/\1/' <<< "$line")
        rate["ct2 $1 $([ "$beam" = 1 ] && echo greedy || echo beam4)"]+=" $sps"
    done < <(THREADS=${THREADS:-2} /usr/bin/python3 bench/peers/ct2_peer.py "$ckpt" "$src" --beams 1,4 \
                 --compute-type "$1" --out "$out/ct2-$1" 2>> "$out/run.log")
}

for r in $(seq "$rounds"); do
    echo "round $r of $rounds, $(date +%T), load $(cut -d' ' -f1 /proc/loadavg)" >&2
    for t in $types; do
        for s in beam4 greedy; do ours "$t" "$t" X=1 "$s"; done
        if [ "$t" = float32 ]; then
            for s in beam4 greedy; do ours float32-openblas float32 CLF_GEMM_PACK=off "$s"; done
        fi
        [ "$t" = bfloat16 ] || peer "$t"
    done
done

mean() { awk '{s = 0; for (i = 1; i <= NF; i++) s += $i; if (NF) printf "%.1f", s / NF}' <<< "$1"; }
printf '%-18s %-7s %-28s %7s %-28s %7s %6s %7s %7s %6s %6s\n' type search "clformer (rounds)" mean "CTranslate2 (rounds)" mean ratio calls ratio* BLEU "BLEU*"
for key in $types float32-openblas; do
    t=${key%-openblas}
    for s in beam4 greedy; do
        o=${rate["ours $key $s"]:-} p=${rate["ct2 $t $s"]:-}
        mo=$(mean "$o") mp=$(mean "$p") mc=$(mean "${rate["calls $key $s"]:-}") ratio=- ratioc=-
        [ -n "$mp" ] && ratio=$(awk -v a="$mo" -v b="$mp" 'BEGIN {printf "%.2f", a / b}')
        [ -n "$mp" ] && [ -n "$mc" ] && ratioc=$(awk -v a="$mc" -v b="$mp" 'BEGIN {printf "%.2f", a / b}')
        bp=-
        [ -f "$out/ct2-$t.beam$([ "$s" = greedy ] && echo 1 || echo 4)" ] &&
            bp=$(bleu "$out/ct2-$t.beam$([ "$s" = greedy ] && echo 1 || echo 4)")
        printf '%-18s %-7s %-28s %7s %-28s %7s %6s %7s %7s %6s %6s\n' "$key" "$s" "${o# }" "$mo" "${p# }" "${mp:--}" \
            "$ratio" "${mc:--}" "$ratioc" "$(bleu "$out/ours-$key-$s.txt")" "$bp"
    done
done
echo "ratio: clformer's mean (the whole command, loading included) / CTranslate2's (its translate calls);"
echo "calls: the mean of clformer's own count of its translate call (loading, reading and encoding left out, as"
echo "CTranslate2's are), ratio* that against CTranslate2's; BLEU ours, BLEU* CTranslate2's; outputs in $out"
