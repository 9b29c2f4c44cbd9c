#!/usr/bin/env bash
# One task of a scale-out summary (docs/scale.md): turns its share of a job's trace files into
# one small step log. The Slurm array job, the Kubernetes Indexed Job and local.sh all run it.
#
#   summarize-shard.sh INDEX COUNT TRACES OUT
#
# INDEX is this task's number, 0 to COUNT-1. The trace files under TRACES (*.json, *.json.gz,
# searched recursively) are sorted by name in version order (rank2 before rank10) and cut into
# COUNT contiguous blocks: a task summarises neighbouring ranks together, which keeps each
# step's transfer time measured across the ranks of one block (docs/scale.md says why that
# matters). The result is OUT/part-INDEX.jsonl.gz, written under a hidden name and renamed when
# complete, so a task that dies leaves nothing that would be read as a summary.
# SEQSKEW names the seqskew binary (default: seqskew on PATH).
set -euo pipefail
if [ $# -ne 4 ]; then
  echo "usage: $0 INDEX COUNT TRACES OUT" >&2
  exit 2
fi
index=$1 count=$2 traces=$3 out=$4
seqskew=${SEQSKEW:-seqskew}
if ! [[ $index =~ ^[0-9]+$ && $count =~ ^[0-9]+$ ]] || [ "$count" -eq 0 ] || [ "$index" -ge "$count" ]; then
  echo "$0: INDEX must be 0 to COUNT-1 (got INDEX=$index COUNT=$count)" >&2
  exit 2
fi

mapfile -d '' files < <(find "$traces" -type f \( -name '*.json' -o -name '*.json.gz' \) -print0 | sort -zV)
total=${#files[@]}
if [ "$total" -eq 0 ]; then
  echo "$0: no trace files (*.json, *.json.gz) under $traces" >&2
  exit 1
fi
first=$((index * total / count))
end=$(((index + 1) * total / count))
if [ "$first" -eq "$end" ]; then
  echo "shard $index of $count: no files (only $total files for $count shards)" >&2
  exit 0
fi

mkdir -p "$out"
part=$(printf 'part-%05d.jsonl.gz' "$index")
"$seqskew" --quiet summarize "${files[@]:first:end-first}" -o "$out/.$part"
mv -f "$out/.$part" "$out/$part"
