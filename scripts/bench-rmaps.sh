#!/usr/bin/env bash
# Mapping benchmark: 10,000 ranks over 1,000 hosts (target: under 50 ms).
#  1. mapping without mpirun (frameworks/rmaps/benches/map.rs: hostfile
#     parsing, allocation and mapping through the in-tree components'
#     modules and the framework's selection, for several policies);
#  2. the whole `mpirun --do-not-launch` (start-up, parameters, component
#     selection, the map crossing the component boundary as JSON), timed by
#     hyperfine.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

echo "==> mapping without mpirun (cargo bench -p oxmpi-framework-rmaps --bench map)"
cargo bench -q -p oxmpi-framework-rmaps --bench map

cargo build -q --release --workspace
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in $(seq 1 1000); do echo "node$i slots=10"; done > "$work/hosts"
echo
echo "==> mpirun --do-not-launch, 10,000 ranks over 1,000 hosts"
if command -v hyperfine >/dev/null; then
    hyperfine -N --warmup 2 --runs 20 \
        "target/release/mpirun --do-not-launch --hostfile $work/hosts -n 10000 true" \
        "target/release/mpirun --do-not-launch --hostfile $work/hosts -n 10000 --map-by node true" \
        "target/release/mpirun --do-not-launch --display-map=json --hostfile $work/hosts -n 10000 true" \
        | grep -E 'Benchmark|Time|Range'
else
    time target/release/mpirun --do-not-launch --hostfile "$work/hosts" -n 10000 true
fi
