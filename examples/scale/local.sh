#!/usr/bin/env bash
# The scale-out summary on one machine, or on a login node over a shared file system
# (docs/scale.md): SHARDS tasks of summarize-shard.sh, PARALLEL at a time, with xargs -P.
#
#   local.sh TRACES OUT [SHARDS [PARALLEL]]      # both default to the number of cores
#
# Then: seqskew analyze OUT   (or drop the OUT folder into the page)
set -euo pipefail
if [ $# -lt 2 ] || [ $# -gt 4 ]; then
  echo "usage: $0 TRACES OUT [SHARDS [PARALLEL]]" >&2
  exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
traces=$1 out=$2
shards=${3:-$(nproc)}
parallel=${4:-$(nproc)}
seq 0 $((shards - 1)) | xargs -P "$parallel" -I{} "$here/summarize-shard.sh" {} "$shards" "$traces" "$out"
