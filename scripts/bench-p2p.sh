#!/usr/bin/env bash
# Point-to-point benchmark: ping-pong latency and streaming
# bandwidth from 0 B to 4 MiB over TCP on loopback, for
#   - raw TCP sockets (the floor: busy-polling, TCP_NODELAY),
#   - Open MPI (--mca btl self,tcp --mca btl_tcp_if_include lo),
#   - MPICH (its UCX device limited to tcp on lo: UCX_TLS=self,tcp), and
#   - oxmpi (the same --mca settings),
# every one with two processes bound to two cores, the same method, sizes and
# data checks (bench/p2p/README.md). Then the wall time of `mpirun -n 2 hello`
# for oxmpi, Open MPI (default pml, and --mca pml ob1) and MPICH, by hyperfine.
#
# The implementations are run in interleaved rounds and a CPU-placement probe
# runs before and after (bench/p2p/README.md, "Rounds"); the table shows the best round of
# each (lowest latency, highest bandwidth). A missing implementation (not
# installed, not built, failing) leaves its column empty with a note.
#
# Usage: scripts/bench-p2p.sh [--quick] [--rounds R] [--runs N]
#   --quick     a tenth of the iterations; one round and 5 hello runs unless given
#   --rounds R  rounds of the point-to-point runs (default 3)
#   --runs N    hyperfine runs per hello command and round (default 20)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

quick=
rounds=
runs=
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=--quick; shift ;;
        --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
        --runs) runs=${2:?--runs needs a number}; shift 2 ;;
        *) echo "usage: $0 [--quick] [--rounds R] [--runs N]" >&2; exit 2 ;;
    esac
done
if [ -n "$quick" ]; then : "${rounds:=1}" "${runs:=5}"; else : "${rounds:=3}" "${runs:=20}"; fi
case "$rounds/$runs" in
    */*[!0-9]* | *[!0-9]*/* | 0/* | */0) echo "bench-p2p.sh: --rounds and --runs take whole numbers from 1" >&2; exit 2 ;;
esac

tgt=${CARGO_TARGET_DIR:-target}
rel=$tgt/release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
note() { echo "bench-p2p.sh: $*" >&2; }
# Per-run time limit (a hung run must not hang the benchmark).
limit=300
[ -n "$quick" ] && limit=120

# --- build ------------------------------------------------------------------
echo "==> building (release)"
have_raw=1
cargo build --release -q -p oxmpi-bench-p2p --no-default-features --bin raw_tcp 2>"$work/build-raw.log" || {
    have_raw=
    note "raw_tcp did not build (cargo output below); its columns stay empty"
    tail -n 20 "$work/build-raw.log" >&2
}
. scripts/bench-common.sh
bench_build_oxmpi -p oxmpi --examples
bench_build_c pt2pt hello

# --- point-to-point ---------------------------------------------------------
tcp_mca=(--mca btl self,tcp --mca btl_tcp_if_include lo)
declare -a names cmds
add() { names+=("$1"); cmds+=("$2"); }
[ -n "$have_raw" ] && add raw "$rel/raw_tcp $quick"
[ -n "$have_ompi" ] && add openmpi "mpirun.openmpi --oversubscribe -n 2 ${tcp_mca[*]} --bind-to core $work/pt2pt.openmpi $quick"
[ -n "$have_mpich" ] && add mpich "env UCX_TLS=self,tcp UCX_NET_DEVICES=lo mpiexec.mpich -n 2 -bind-to core $work/pt2pt.mpich $quick"
[ -n "$have_ox" ] && add oxmpi "$rel/mpirun -n 2 ${tcp_mca[*]} --bind-to core $rel/oxmpi_pt2pt $quick"

probe() {
    python3 scripts/placement-probe.py
}

echo "==> point-to-point: ${names[*]:-nothing to run}; $rounds round(s)"
echo "placement probe before: $(probe)"
for r in $(seq 1 "$rounds"); do
    for i in "${!names[@]}"; do
        out=$work/p2p-${names[$i]}-$r
        # shellcheck disable=SC2086 # the command is a word list
        if ! timeout "$limit" ${cmds[$i]} >"$out.out" 2>"$out.err"; then
            note "${names[$i]} failed in round $r: ${cmds[$i]}"
            tail -n 8 "$out.err" >&2
        fi
    done
done
echo "placement probe after:  $(probe)"
for n in "${names[@]}"; do
    grep -h '^#' "$work/p2p-$n-1.out" 2>/dev/null | head -n 1 || true
done

# --- hello wall time --------------------------------------------------------
hnames=() hcmds=()
hadd() { hnames+=("$1"); hcmds+=("$2"); }
if [ -n "$have_ox" ] && [ -x "$rel/examples/hello" ]; then
    hadd "oxmpi mpirun -n 2 hello" "$rel/mpirun -n 2 $rel/examples/hello"
else
    note "no oxmpi hello ($rel/examples/hello, built by cargo build --release -p oxmpi --examples)"
fi
[ -n "$have_ompi" ] && hadd "Open MPI mpirun -n 2 hello" "mpirun.openmpi -n 2 $work/hello.openmpi"
[ -n "$have_ompi" ] && hadd "Open MPI mpirun -n 2 --mca pml ob1 hello" "mpirun.openmpi -n 2 --mca pml ob1 $work/hello.openmpi"
[ -n "$have_mpich" ] && hadd "MPICH mpiexec -n 2 hello" "mpiexec.mpich -n 2 $work/hello.mpich"
if ! command -v hyperfine >/dev/null; then
    note "hyperfine is needed for the hello timings (apt-get install hyperfine); skipped"
    hnames=()
fi
echo "==> hello wall time: ${#hnames[@]} command(s), $rounds round(s) of $runs runs"
# One trial run each under a time limit: hyperfine has none, and a command
# that fails or hangs is reported and left out.
hok=()
for i in "${!hnames[@]}"; do
    # shellcheck disable=SC2086 # the command is a word list
    if timeout 60 ${hcmds[$i]} >"$work/trial-$i.log" 2>&1; then
        hok+=(1)
    else
        rc=$?
        hok+=("")
        if [ "$rc" = 124 ]; then note "hung (killed after 60 s): ${hcmds[$i]}"; else note "failed (exit $rc): ${hcmds[$i]}"; fi
        tail -n 5 "$work/trial-$i.log" >&2
    fi
done
for r in $(seq 1 "$rounds"); do
    for i in "${!hnames[@]}"; do
        [ -n "${hok[$i]}" ] || continue
        # timeout signals its whole process group: hyperfine, mpirun and the ranks.
        timeout $((runs * 30 + 120)) hyperfine -N --warmup 2 --runs "$runs" --export-json "$work/h$r-$i.json" \
            "${hcmds[$i]}" >"$work/h$r-$i.log" 2>&1 || {
            note "failed or hung in round $r: ${hcmds[$i]}"
            tail -n 5 "$work/h$r-$i.log" >&2
        }
    done
done

# --- table ------------------------------------------------------------------
python3 - "$work" "$rounds" "${names[*]:-}" "${#hnames[@]}" "${hnames[@]}" <<'PY'
import json, os, statistics, sys
work, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
nh, hnames = int(sys.argv[4]), sys.argv[5:]
SIZES = [0, 1, 8, 64, 512, 4096, 65536, 262144, 1 << 20, 4 << 20]
LABEL = {"raw": "raw TCP", "openmpi": "Open MPI", "mpich": "MPICH", "oxmpi": "oxmpi"}
ORDER = [n for n in ("raw", "openmpi", "mpich", "oxmpi")]

def human(n):
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k} {unit}"
    return f"{n} B"

# best[impl][kind][size]: lowest latency, highest bandwidth over the rounds.
best = {n: {"lat": {}, "bw": {}} for n in ORDER}
for n in names:
    for r in range(1, rounds + 1):
        p = os.path.join(work, f"p2p-{n}-{r}.out")
        if not os.path.exists(p):
            continue
        for line in open(p):
            f = line.split()
            if len(f) != 3 or f[0] not in ("lat", "bw"):
                continue
            size, v = int(f[1]), float(f[2])
            d = best[n][f[0]]
            if size not in d or (v < d[size] if f[0] == "lat" else v > d[size]):
                d[size] = v

shown = [n for n in ORDER if n != "mpich" or n in names]
def cell(n, kind, size):
    v = best[n][kind].get(size)
    if v is None:
        return "—"
    # Three significant figures for small values, whole units above 100.
    return f"{v:.0f}" if v >= 100 else f"{v:.3g}"
head = ["size"] + [f"{LABEL[n]} lat µs" for n in shown] + [f"{LABEL[n]} bw MB/s" for n in shown]
print()
print("| " + " | ".join(head) + " |")
print("|" + "|".join("---:" if i else "---" for i in range(len(head))) + "|")
for s in SIZES:
    row = [human(s)] + [cell(n, "lat", s) for n in shown] + [cell(n, "bw", s) for n in shown]
    print("| " + " | ".join(row) + " |")
print()
print("latency: one way, half a ping-pong round trip; bandwidth: 64-message windows, 1 MB = 10^6 B;")
print("best of", rounds, "round(s); raw 0 B moves 1 byte (a stream cannot carry an empty message).")
missing = [LABEL[n] for n in ORDER if n not in names or not best[n]["lat"]]
if missing:
    print("no figures from:", ", ".join(missing), "(see the messages above)")

def ratio(n, kind, size, target, better):
    a, b = best[n][kind].get(size), best["raw"][kind].get(size)
    if a is None or b is None:
        return f"| {LABEL[n]:9} | — | {target} |"
    r = a / b
    ok = r <= 1.10 if better == "low" else r >= 0.90
    mark = " (met)" if ok and n == "oxmpi" else (" (not met)" if n == "oxmpi" else "")
    return f"| {LABEL[n]:9} | {r:.2f}×{mark} | {target} |"

print()
print("| 8 B latency vs raw TCP | ratio | oxmpi target |")
print("|---|---:|---|")
for n in shown[1:]:
    print(ratio(n, "lat", 8, "≤ 1.10×", "low"))
print()
print("| 1 MiB bandwidth vs raw TCP | ratio | oxmpi target |")
print("|---|---:|---|")
for n in shown[1:]:
    print(ratio(n, "bw", 1 << 20, "≥ 0.90× (within 10%)", "high"))

if nh:
    print()
    print(f"| {'hello wall time':40} | median ms | min ms | target |")
    print(f"|{'-' * 42}|----------:|-------:|--------|")
    for i, name in enumerate(hnames):
        times = []
        for r in range(1, rounds + 1):
            p = os.path.join(work, f"h{r}-{i}.json")
            try:
                times += json.load(open(p))["results"][0]["times"]
            except (OSError, ValueError, KeyError, IndexError):
                pass  # that round failed (reported above)
        target = "< 30 ms" if name.startswith("oxmpi") else ""
        if not times:
            print(f"| {name:40} | failed    |        | {target} |")
            continue
        print(f"| {name:40} | {statistics.median(times) * 1e3:9.1f} | {min(times) * 1e3:6.1f} | {target} |")
PY
