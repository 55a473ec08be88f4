#!/usr/bin/env bash
# The OSU Micro-Benchmarks against Open MPI and MPICH. The OSU source
# tree (version 7.x, not in this repository: unpack its release tarball
# anywhere) is built three times — with oxmpi's mpicc and mpicxx, with
# Open MPI's and with MPICH's — and osu_latency, osu_bw, osu_allreduce,
# osu_bcast and osu_barrier (or the tests named) run on 2 ranks with each
# library's defaults, sizes 1 B to 64 KiB, in interleaved rounds (each
# round starts at a different library) with a CPU-placement probe before
# and after.
#
# For each test and size the table shows each library's best round and
# oxmpi's ratio to the better peer, of the best rounds and of the medians
# of the rounds: time over time for latencies, the peer's bandwidth over
# oxmpi's for osu_bw, so below 1 oxmpi is faster either way. On a
# small VM the placement of the two vCPUs moves all three libraries
# together by up to 2-3x from one run to the next; compare ratios, over
# many rounds (8 or more). The verdict column tests oxmpi's rounds
# against each peer's (Mann-Whitney U, one-sided, p < 0.01): "slower"
# when significantly slower than either peer, "faster" when
# significantly faster than both, "level" otherwise; the last line lists
# every test and size where oxmpi is significantly slower.
#
# Usage: scripts/bench-osu.sh OSU_SOURCE_DIR [--rounds R] [--tests LIST] [--builds DIR]
#   --rounds R     rounds (default 8)
#   --tests LIST   comma-separated OSU tests (default
#                  osu_latency,osu_bw,osu_allreduce,osu_bcast,osu_barrier)
#   --builds DIR   keep the three OSU builds in DIR and reuse them when
#                  present (default: a temporary directory, removed)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() {
    echo "usage: $0 OSU_SOURCE_DIR [--rounds R] [--tests LIST] [--builds DIR]" >&2
    exit 2
}
note() { echo "bench-osu.sh: $*" >&2; }

src=
rounds=8
tests=osu_latency,osu_bw,osu_allreduce,osu_bcast,osu_barrier
builds=
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
        --tests) tests=${2:?--tests needs a list, e.g. osu_latency,osu_bw}; shift 2 ;;
        --builds) builds=${2:?--builds needs a directory}; shift 2 ;;
        -*) usage ;;
        *) [ -z "$src" ] || usage; src=$1; shift ;;
    esac
done
[ -n "$src" ] || usage
case "$rounds" in
    *[!0-9]* | 0 | '') note "--rounds takes a whole number from 1"; exit 2 ;;
esac
case "$tests" in
    *[!a-z_,]* | '') note "--tests takes a comma-separated list of OSU test names, e.g. osu_latency,osu_bw"; exit 2 ;;
esac
if [ ! -x "$src/configure" ] || [ ! -d "$src/c/mpi" ]; then
    note "$src is not an OSU Micro-Benchmarks source tree (no configure script and c/mpi directory);"
    note "unpack osu-micro-benchmarks-7.x.tar.gz and give its top directory"
    exit 2
fi
src=$(cd "$src" && pwd -P)

tgt=${CARGO_TARGET_DIR:-target}
rel=$(mkdir -p "$tgt" && cd "$tgt" && pwd -P)/release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "$builds" ]; then
    builds=$work/builds
fi
mkdir -p "$builds"
builds=$(cd "$builds" && pwd -P)
# Per-run time limit (a hung run must not hang the benchmark).
limit=300

echo "==> building oxmpi (release)"
. scripts/bench-common.sh
bench_build_oxmpi -p oxmpi-mpicc -p oxmpi-capi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# Builds the OSU tree into $builds/$1 with compilers $2 and $3, unless a
# finished build is there; answers whether it is usable.
build_osu() {
    local name=$1 cc=$2 cxx=$3 dir=$builds/$1
    if [ -f "$dir/.built" ]; then
        return 0
    fi
    echo "==> building OSU with $cc"
    rm -rf "$dir"
    cp -r "$src" "$dir"
    if ! (cd "$dir" && ./configure CC="$cc" CXX="$cxx" >configure.log 2>&1 &&
        make -j"$(nproc)" >make.log 2>&1); then
        note "OSU did not build with $cc ($name); its column stays empty. Last lines:"
        tail -n 15 "$dir/configure.log" "$dir/make.log" 2>/dev/null >&2 || true
        return 1
    fi
    touch "$dir/.built"
}

declare -a impls runners
if [ -n "$have_ox" ] && build_osu ox "$rel/mpicc" "$rel/mpicxx"; then
    impls+=(ox)
    runners+=("$rel/mpirun -n 2")
fi
# Adds peer library $1 (named $2 in messages) when its launcher $3 and
# compilers $4 and $5 are installed and OSU builds with them; $6 names its
# Debian packages, $7 is its run command for 2 ranks.
add_peer() {
    local name=$1 label=$2 launcher=$3 cc=$4 cxx=$5 packages=$6 runner=$7
    if ! command -v "$cc" >/dev/null || ! command -v "$launcher" >/dev/null; then
        note "$label not found ($cc, $launcher; Debian: $packages); its column stays empty"
        return 0
    fi
    if build_osu "$name" "$cc" "$cxx"; then
        impls+=("$name")
        runners+=("$runner")
    fi
}
add_peer openmpi "Open MPI" mpirun.openmpi mpicc.openmpi mpicxx.openmpi \
    "openmpi-bin libopenmpi-dev" "mpirun.openmpi -n 2"
add_peer mpich MPICH mpiexec.mpich mpicc.mpich mpicxx.mpich \
    "mpich libmpich-dev" "env -u UCX_TLS -u UCX_NET_DEVICES mpiexec.mpich -n 2"
[ ${#impls[@]} -gt 0 ] || { note "nothing built; nothing to run"; exit 1; }

# The path of test $1 inside OSU build $2 (found, not assumed: the
# benchmarks sit in per-kind directories), or nothing.
test_path() {
    find "$2/c/mpi" -type f -name "$1" -perm -u+x 2>/dev/null | head -n 1
}

probe() { python3 scripts/placement-probe.py; }
IFS=, read -r -a test_list <<<"$tests"
declare -A paths
for impl in "${impls[@]}"; do
    for t in "${test_list[@]}"; do
        paths[$impl.$t]=$(test_path "$t" "$builds/$impl")
    done
done
echo "==> ${test_list[*]}: ${impls[*]}; $rounds round(s), 2 ranks"
echo "placement probe before: $(probe)"
mkdir -p "$work/out"
for r in $(seq 1 "$rounds"); do
    for t in "${test_list[@]}"; do
        for k in $(seq 0 $((${#impls[@]} - 1))); do
            # Each round starts at a different library.
            i=$(((k + r) % ${#impls[@]}))
            impl=${impls[$i]}
            exe=${paths[$impl.$t]}
            if [ -z "$exe" ]; then
                note "$t was not built for $impl; skipped"
                continue
            fi
            out=$work/out/$t.$impl.$r
            # shellcheck disable=SC2086 # the runner is a command and its arguments
            if ! timeout "$limit" ${runners[$i]} "$exe" -m 1:65536 >"$out" 2>&1; then
                note "round $r: $t under $impl failed or timed out; last lines:"
                tail -n 5 "$out" >&2
                : >"$out"
            fi
        done
    done
    echo "round $r done"
done
echo "placement probe after: $(probe)"

python3 - "$work/out" "$rounds" "${test_list[@]}" <<'PY'
import os, statistics, sys

sys.path.insert(0, "scripts")
from bench_stats import ALPHA, verdict

slower_cases = []

out, rounds, tests = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
impls = ("ox", "openmpi", "mpich")

def rows(path):
    """Size -> value of one OSU output file."""
    values = {}
    try:
        text = open(path).read()
    except OSError:
        return values
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].isdigit():
            try:
                values[int(parts[0])] = float(parts[1])
            except ValueError:
                pass
        elif len(parts) >= 1 and not line.startswith("#"):
            # osu_barrier prints one number, the latency, without a size.
            try:
                values[0] = float(parts[0])
            except ValueError:
                pass
    return values

for t in tests:
    higher_better = t in ("osu_bw", "osu_bibw", "osu_mbw_mr")
    samples = {impl: {} for impl in impls}
    for impl in impls:
        for r in range(1, rounds + 1):
            for size, v in rows(os.path.join(out, f"{t}.{impl}.{r}")).items():
                samples[impl].setdefault(size, []).append(v)
    sizes = sorted(set().union(*(samples[i].keys() for i in impls)))
    unit = "MB/s" if higher_better else "us"
    print(f"\n== {t} ({unit}; best of {rounds} rounds; ratio oxmpi / better peer, below 1 oxmpi is faster)")
    if not sizes:
        print("  no results (see the messages above)")
        continue
    print(f"{'size':>8} {'oxmpi':>10} {'Open MPI':>10} {'MPICH':>10} {'best':>6} {'median':>7} {'verdict':>8}")
    pick = max if higher_better else min
    for size in sizes:
        best = {i: pick(samples[i][size]) for i in impls if samples[i].get(size)}
        med = {i: statistics.median(samples[i][size]) for i in impls if samples[i].get(size)}
        def ratio(d):
            peers = [d[i] for i in ("openmpi", "mpich") if i in d]
            if "ox" not in d or not peers or d["ox"] == 0:
                return "-"
            better = pick(peers)
            return f"{(better / d['ox']) if higher_better else (d['ox'] / better):.2f}"
        cell = lambda i: f"{best[i]:10.2f}" if i in best else f"{'-':>10}"
        label = "-" if size == 0 and t == "osu_barrier" else str(size)
        peers = [samples[i][size] for i in ("openmpi", "mpich") if samples[i].get(size)]
        v = verdict(samples["ox"].get(size, []), peers, not higher_better)
        if v == "slower":
            slower_cases.append(f"{t} {label}")
        print(f"{label:>8} {cell('ox')} {cell('openmpi')} {cell('mpich')} {ratio(best):>6} {ratio(med):>7} {v:>8}")

print(
    f"\nverdict: a Mann-Whitney U test of oxmpi's {rounds} rounds against each peer's "
    f"(one-sided, p < {ALPHA}): 'slower' when oxmpi is significantly slower than either peer, "
    "'faster' when significantly faster than both, else 'level'"
)
if slower_cases:
    print("significantly slower than a peer: " + ", ".join(slower_cases))
else:
    print("significantly slower than a peer: nowhere")
PY
