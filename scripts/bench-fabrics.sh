#!/usr/bin/env bash
# Point-to-point over the network libraries: osu_latency and osu_bw on 2
# ranks of this host through libfabric and UCX, for oxmpi (pml cm over mtl
# ofi, pml ucx), Open MPI (the same pmls) and MPICH (ch4:ucx on Debian),
# with the libraries' own ping-pong tools as the floor: fi_pingpong
# (tagged messages on an RDM endpoint) and ucx_perftest (tag_lat,
# tag_bw). Rows: ofi over tcp;ofi_rxm, ucx over UCX_TLS=tcp, posix,self
# and cma,tcp (cma alone carries no small messages). Rounds are
# interleaved (each round starts at a different program) and each row
# reports every program's best round and median, and oxmpi's ratio to the
# floor (the targets: latency within 10%, bandwidth within 5%), with two
# verdicts from scripts/bench_stats.py: whether the target is met (oxmpi's
# rounds against the floor's scaled to it) and how oxmpi stands against
# Open MPI and MPICH (as bench-osu.sh says it).
#
# The OSU builds are bench-osu.sh's (--builds DIR, made there first).
#
# Usage: scripts/bench-fabrics.sh OSU_BUILDS_DIR [--rounds R] [--sizes LIST]
#   --rounds R    rounds (default 6)
#   --sizes LIST  message sizes in bytes (default 8,1024,65536,1048576)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

note() { echo "bench-fabrics.sh: $*" >&2; }
usage() {
    echo "usage: $0 OSU_BUILDS_DIR [--rounds R] [--sizes LIST]" >&2
    exit 2
}

builds=
rounds=6
sizes=8,1024,65536,1048576
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
        --sizes) sizes=${2:?--sizes needs a list}; shift 2 ;;
        -*) usage ;;
        *) [ -z "$builds" ] || usage; builds=$1; shift ;;
    esac
done
[ -n "$builds" ] || usage
case "$rounds" in *[!0-9]* | 0 | '') note "--rounds takes a whole number from 1"; exit 2 ;; esac
case "$sizes" in *[!0-9,]* | '') note "--sizes takes comma-separated byte counts"; exit 2 ;; esac
for lib in ox openmpi mpich; do
    if [ ! -x "$builds/$lib/c/mpi/pt2pt/standard/osu_latency" ]; then
        note "$builds/$lib has no OSU build; make them with scripts/bench-osu.sh OSU_SOURCE --builds $builds"
        exit 2
    fi
done
for tool in fi_pingpong ucx_perftest mpirun.openmpi mpiexec.mpich; do
    command -v "$tool" >/dev/null || { note "$tool is missing (libfabric-bin, ucx-utils, openmpi-bin, mpich)"; exit 2; }
done

cargo build --release -q -p oxmpi-mpirun -p oxmpi-capi -p oxmpi-pml-cm -p oxmpi-mtl-ofi \
    -p oxmpi-pml-ucx -p oxmpi-pml-ob1 -p oxmpi-btl-self -p oxmpi-btl-sm -p oxmpi-btl-tcp \
    -p oxmpi-coll-basic -p oxmpi-coll-self -p oxmpi-coll-sm -p oxmpi-coll-tuned \
    -p oxmpi-rmaps-round-robin -p oxmpi-rmaps-ppr -p oxmpi-rmaps-seq
ox_mpirun=$PWD/target/release/mpirun
largest=$(echo "$sizes" | tr ',' '\n' | sort -n | tail -1)
port=13337
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Open MPI refuses to start as root without these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# One OSU run: prints "size value" lines for the sizes asked (none, with a
# note, when the run fails).
osu() { # lib test cmd...
    local lib=$1 test=$2; shift 2
    local prog=$builds/$lib/c/mpi/pt2pt/standard/$test
    local text
    if ! text=$(timeout 300 "$@" "$prog" -m "1:$largest" 2>&1); then
        note "$lib $test failed: $* ($(echo "$text" | tail -1))"
        return 0
    fi
    echo "$text" | awk -v want=",$sizes," '$1 ~ /^[0-9]+$/ && index(want, "," $1 ",") { print $1, $2 }'
}

# The floors. fi_pingpong prints a row per size ("bytes #sent #ack total
# time MB/sec usec/xfer Mxfers/sec", usec/xfer one way, sizes as 1k, 1m); ucx_perftest a
# line "Final: iterations latency(50%ile average overall, one way)
# bandwidth(average overall MB/s) rate(average overall)".
fi_floor() { # provider size -> latency_us bandwidth_MBps
    local prov=$1 size=$2
    fi_pingpong -p "$prov" -e rdm -m tagged -S "$size" -I 2000 -B "$port" >/dev/null 2>&1 &
    local server=$!
    sleep 0.3
    timeout 60 fi_pingpong -p "$prov" -e rdm -m tagged -S "$size" -I 2000 -P "$port" 127.0.0.1 2>/dev/null |
        awk -v s="$size" '
            function bytes(t) { n = t + 0; if (t ~ /k$/) n *= 1024; else if (t ~ /m$/) n *= 1048576; else if (t ~ /g$/) n *= 1073741824; return n }
            $1 ~ /^[0-9]/ && bytes($1) == s { print $7, $6; exit }'
    wait "$server" 2>/dev/null || true
}
ucx_floor() { # tls test size -> value
    local tls=$1 test=$2 size=$3
    UCX_TLS=$tls ucx_perftest -p "$port" >/dev/null 2>&1 &
    local server=$!
    sleep 0.3
    local n=20000
    [ "$size" -lt 65536 ] || n=1000
    UCX_TLS=$tls timeout 60 ucx_perftest 127.0.0.1 -p "$port" -t "$test" -s "$size" -n "$n" 2>/dev/null |
        awk -v t="$test" '$1 == "Final:" { print (t == "tag_lat" ? $4 : $6); exit }'
    wait "$server" 2>/dev/null || true
}

declare -A rows=(
    [ofi_tcp]="ofi tcp;ofi_rxm"
    [ucx_tcp]="ucx UCX_TLS=tcp"
    [ucx_posix]="ucx UCX_TLS=posix,self"
    [ucx_cma]="ucx UCX_TLS=cma,tcp"
)
runner() { # row lib -> command prefix
    case "$1:$2" in
        ofi_tcp:ox) echo "$ox_mpirun -n 2 --mca pml cm --mca mtl_ofi_provider_include tcp" ;;
        ofi_tcp:openmpi) echo "mpirun.openmpi -n 2 --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include tcp" ;;
        ucx_*:ox) echo "$ox_mpirun -n 2 --mca pml ucx -x UCX_TLS" ;;
        ucx_*:openmpi) echo "mpirun.openmpi -n 2 --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS" ;;
        ucx_*:mpich) echo "mpiexec.mpich -n 2" ;;
        *) echo "" ;;
    esac
}
tls_of() { case "$1" in ucx_tcp) echo tcp ;; ucx_posix) echo posix,self ;; ucx_cma) echo cma,tcp ;; esac; }

for ((r = 1; r <= rounds; r++)); do
    note "round $r of $rounds"
    for row in ofi_tcp ucx_tcp ucx_posix ucx_cma; do
        libs=(ox openmpi mpich)
        # Interleave: each round starts at a different program.
        shift_by=$(( (r - 1) % 3 ))
        libs=("${libs[@]:shift_by}" "${libs[@]:0:shift_by}")
        for lib in "${libs[@]}"; do
            cmd=$(runner "$row" "$lib")
            [ -n "$cmd" ] || continue
            # oxmpi and Open MPI pass UCX_TLS on with -x; MPICH's hydra
            # passes the whole environment.
            if [[ $row == ucx_* ]]; then
                export UCX_TLS
                UCX_TLS=$(tls_of "$row")
            fi
            for test in osu_latency osu_bw; do
                # shellcheck disable=SC2086
                osu "$lib" "$test" $cmd | sed "s/^/$row $lib $test /" >>"$out/results"
            done
            unset UCX_TLS
        done
        for size in ${sizes//,/ }; do
            if [ "$row" = ofi_tcp ]; then
                read -r lat bw < <(fi_floor tcp "$size") || true
            else
                tls=$(tls_of "$row")
                lat=$(ucx_floor "$tls" tag_lat "$size")
                bw=$(ucx_floor "$tls" tag_bw "$size")
            fi
            echo "$row floor osu_latency $size ${lat:-nan}" >>"$out/results"
            echo "$row floor osu_bw $size ${bw:-nan}" >>"$out/results"
        done
    done
done

python3 - "$out/results" "$rounds" <<'EOF'
import sys, statistics, collections

sys.path.insert(0, "scripts")
from bench_stats import ALPHA, target, verdict

data = collections.defaultdict(list)
for line in open(sys.argv[1]):
    row, lib, test, size, value = line.split()
    try:
        data[(row, test, int(size), lib)].append(float(value))
    except ValueError:
        pass
libs = ["ox", "openmpi", "mpich", "floor"]
names = {"ox": "oxmpi", "openmpi": "Open MPI", "mpich": "MPICH", "floor": "floor"}
missed, slower = [], []
for test, unit, better, factor in [("osu_latency", "us", min, 1.10), ("osu_bw", "MB/s", max, 0.95)]:
    print(f"\n{test} ({unit}; best round [median]); ratio = oxmpi / floor (" +
          ("time over time" if test == "osu_latency" else "floor's bandwidth over oxmpi's") + ")")
    print(f"{'row':<10} {'size':>8} " + " ".join(f"{names[l]:>20}" for l in libs) +
          f" {'ratio':>14} {'target':>8} {'peers':>7}")
    for row in ["ofi_tcp", "ucx_tcp", "ucx_posix", "ucx_cma"]:
        for size in sorted({k[2] for k in data if k[0] == row and k[1] == test}):
            cells, best = [], {}
            for lib in libs:
                v = data.get((row, test, size, lib), [])
                if v:
                    best[lib] = (better(v), statistics.median(v))
                    cells.append(f"{best[lib][0]:>9.2f} [{best[lib][1]:>8.2f}]")
                else:
                    cells.append(f"{'-':>20}")
            ratio = "-"
            if "ox" in best and "floor" in best and best["floor"][0] > 0:
                (ob, om), (fb, fm) = best["ox"], best["floor"]
                if test == "osu_latency":
                    ratio = f"{ob / fb:.2f} [{om / fm:.2f}]"
                else:
                    ratio = f"{fb / ob:.2f} [{fm / om:.2f}]"
            rounds_of = lambda lib: data.get((row, test, size, lib), [])
            worse_is_greater = test == "osu_latency"
            t = target(rounds_of("ox"), rounds_of("floor"), factor, worse_is_greater)
            peers = [rounds_of(l) for l in ("openmpi", "mpich") if rounds_of(l)]
            v = verdict(rounds_of("ox"), peers, worse_is_greater)
            if t == "missed":
                missed.append(f"{row} {test} {size}")
            if v == "slower":
                slower.append(f"{row} {test} {size}")
            print(f"{row:<10} {size:>8} " + " ".join(cells) + f" {ratio:>14} {t:>8} {v:>7}")
print(
    f"\ntarget: a Mann-Whitney U test (one-sided, p < {ALPHA}) of oxmpi's {sys.argv[2]} rounds "
    "against the floor's rounds scaled to the target (latency within 10%: x 1.10; bandwidth "
    "within 5%: x 0.95): 'met', 'missed', or 'unclear' when neither is significant.\n"
    "peers: the same test against Open MPI's and MPICH's rounds: 'slower' than either, "
    "'faster' than both, else 'level'."
)
print("target missed: " + (", ".join(missed) if missed else "nowhere"))
print("significantly slower than a peer: " + (", ".join(slower) if slower else "nowhere"))
EOF
