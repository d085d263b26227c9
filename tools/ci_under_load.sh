#!/usr/bin/env bash
# CI as it runs on a busy machine: a fresh clone of this checkout's HEAD, `bash .ci/run` in it,
# while CPU-bound busy loops run beside it: LOAD_PER_CORE of them on each core (default 1),
# pinned with taskset where it exists.
# Nothing in the suite may depend on how busy the machine is: no wall-clock assertion, no
# emulator limit in seconds, compiler and browser timeouts with room to spare.
#
#   bash tools/ci_under_load.sh [CLONE_DIR]      (default: a new folder under /tmp)
#
# The log goes to CLONE_DIR/ci.log; the exit code is .ci/run's.
set -uo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-$(mktemp -d /tmp/simtlab-ci-load.XXXXXX)/repo}"
git clone -q "$repo" "$dest" || exit 1

busy=()
for core in $(seq 0 $(( $(nproc) - 1 ))); do
 for _ in $(seq 1 "${LOAD_PER_CORE:-1}"); do
  if command -v taskset >/dev/null; then
    taskset -c "$core" bash -c 'while :; do :; done' & busy+=($!)
  else
    bash -c 'while :; do :; done' & busy+=($!)
  fi
 done
done
trap 'kill "${busy[@]}" 2>/dev/null' EXIT

start=$(date +%s)
(cd "$dest" && CI=true bash .ci/run) > "$dest/ci.log" 2>&1
rc=$?
echo "ci under load: exit $rc after $(( $(date +%s) - start )) s, load average $(cut -d' ' -f1-3 /proc/loadavg); log: $dest/ci.log"
tail -n 5 "$dest/ci.log"
exit $rc
