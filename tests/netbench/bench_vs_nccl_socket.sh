#!/usr/bin/env bash
# Benchmark, not a test (no ctest entry): our TCP transport against NCCL's own Socket transport
# (NET/Socket inside libnccl.so.2, exposed as a net plugin by ../shared/tools/nccl-socket-shim),
# both driven by the same `nccl-pilot netbench` in the same run. For each case it runs
# INVOCATIONS separate sets, each alternating the two (ours, NCCL's, NCCL's, ours, ...) RUNS
# times, and prints, per size, the median over the sets of each set's median GB/s, p50/p99
# latency (sender: first isend -> test() done) and CPU time per GB moved (both processes,
# getrusage), with the ratio ours/NCCL's and, for GB/s and CPU, the range of the per-set ratios
# (one lucky set is not a result: single sets of 5 move by 10-20% on a shared 2-vCPU machine).
# GB/s: higher is better; latency and CPU: lower is better. The header names the kernel's TCP
# congestion control, which moves both transports (docs/performance.md).
#
# Cases (CASES, comma-separated):
#   loopback  127.0.0.1 on lo; NCCL with its default for such a NIC: no helper thread, the data
#             on the one connection socket
#   aws       the same, NCCL with NCCL_SOCKET_NTHREADS=2 NCCL_NSOCKS_PERTHREAD=8 (its AWS ENA default)
#   gcp       the same, NCCL with NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=1 (its GCP gVNIC default)
#   veth      two network namespaces joined by a veth pair, each end shaped by tc htb to RATE
#             (RATE=none: unshaped)
#             (needs root; skipped with a message otherwise)
#
# Usage: tests/netbench/bench_vs_nccl_socket.sh [BUILD_DIR]
#   BUILD_DIR  holds bin/nccl-pilot and lib/libnccl-net-pilot.so (build)
# Environment: RUNS (5), INVOCATIONS (3), SIZES (4K,64K,512K,4M), MIN_BYTES per size and run (256M), CHANNELS (2),
#   PROTO (simple), CASES (loopback,aws,gcp,veth), RATE (4gbit), OURS_ENV (extra VAR=VALUE
#   words for our transport), RESULTS_DIR (keep every run's JSON there), LIBNCCL (the
#   libnccl.so.2 the shim wraps; the CUDA toolkit's by default), PILOT_SHARED (../shared).
# Exit status: 0; 1 on a failed run; 77 (skip) when the shim or libnccl.so.2 is missing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${1:-$repo/build}
runs=${RUNS:-5}
invocations=${INVOCATIONS:-3}
sizes=${SIZES:-4K,64K,512K,4M}
min_bytes=${MIN_BYTES:-256M}
channels=${CHANNELS:-2}
proto=${PROTO:-simple}
cases=${CASES:-loopback,aws,gcp,veth}
rate=${RATE:-4gbit}
shared=${PILOT_SHARED:-$repo/../shared}
cli=$build/bin/nccl-pilot
ours=$build/lib/libnccl-net-pilot.so
read -r -a ours_env <<<"${OURS_ENV:-}"

die() {
  echo "bench_vs_nccl_socket: $*" >&2
  exit 1
}
skip() {
  echo "bench_vs_nccl_socket: skipped: $*"
  exit 77
}
[[ -x $cli ]] || die "$cli not found (build the nccl-pilot target)"
[[ -f $ours ]] || die "$ours not found (build the nccl_net_pilot target)"
command -v jq >/dev/null || die "jq is not installed (run tools/install-deps.sh)"
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive number"
[[ $invocations =~ ^[1-9][0-9]*$ ]] || die "INVOCATIONS must be a positive number"

shim_dir=$shared/tools/nccl-socket-shim
[[ -x $shim_dir/build.sh ]] ||
  skip "$shim_dir not found (clone ../shared beside the repository): NCCL's Socket transport cannot be loaded"

work=$(mktemp -d /tmp/bench-vs-nccl-socket.XXXXXX)
namespaces=()
cleanup() {
  for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

if ! shim=$("$shim_dir/build.sh" "${LIBNCCL:-}" "$work/shim" 2>"$work/shim.log"); then
  skip "NCCL's Socket transport is not available: $(tail -n 1 "$work/shim.log") (needs an unstripped libnccl.so.2, e.g. the CUDA toolkit's; LIBNCCL names another)"
fi
results=${RESULTS_DIR:-$work/results}
mkdir -p "$results"

# NCCL's socket settings reach only the runs that set them.
base_env=(env -u NCCL_SOCKET_NTHREADS -u NCCL_NSOCKS_PERTHREAD -u NCCL_NET -u NCCL_NET_PLUGIN
  NCCL_PILOT_TRANSPORT=socket)
netbench_args=(netbench --channels "$channels" --proto "$proto" --sizes "$sizes"
  --min-bytes "$min_bytes" --json)

# run_loopback OUT PLUGIN ENV... : one netbench run with a spawned peer on lo.
run_loopback() {
  local out=$1 plugin=$2
  shift 2
  "${base_env[@]}" NCCL_SOCKET_IFNAME=lo "$@" "$cli" "${netbench_args[@]}" --plugin "$plugin" \
    >"$out" 2>"$out.err" || die "run failed ($plugin $*): $(tail -n 3 "$out.err")"
}

ns_a="" ns_b="" veth_a="" veth_b=""
# Two namespaces, a veth pair between them, htb at RATE on both ends; false where not allowed.
make_veth() {
  local id=$$
  ns_a=pilotbenchA$id ns_b=pilotbenchB$id veth_a=pbA$id veth_b=pbB$id
  ip netns add "$ns_a" 2>/dev/null || return 1
  namespaces+=("$ns_a")
  ip netns add "$ns_b" || return 1
  namespaces+=("$ns_b")
  ip link add "$veth_a" netns "$ns_a" type veth peer name "$veth_b" netns "$ns_b" || return 1
  local ns dev addr
  for spec in "$ns_a $veth_a 10.98.0.1/24" "$ns_b $veth_b 10.98.0.2/24"; do
    read -r ns dev addr <<<"$spec"
    ip -n "$ns" addr add "$addr" dev "$dev" || return 1
    ip -n "$ns" link set "$dev" up || return 1
    ip -n "$ns" link set lo up || return 1
    [[ $rate == none ]] && continue
    ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: htb default 10 || return 1
    ip netns exec "$ns" tc class add dev "$dev" parent 1: classid 1:10 htb rate "$rate" \
      quantum 65536 || return 1
  done
  # The kernel reports carrier on a new veth asynchronously; until then it is not RUNNING.
  for spec in "$ns_a $veth_a" "$ns_b $veth_b"; do
    read -r ns dev <<<"$spec"
    for _ in $(seq 100); do
      [[ $(ip netns exec "$ns" cat "/sys/class/net/$dev/operstate") == up ]] && break
      sleep 0.05
    done
  done
}

# run_veth OUT PLUGIN ENV... : the receiver listens in namespace B, the sender runs in A.
run_veth() {
  local out=$1 plugin=$2 port=18515
  shift 2
  "${base_env[@]}" NCCL_SOCKET_IFNAME="=$veth_b" "$@" ip netns exec "$ns_b" \
    "$cli" netbench --plugin "$plugin" --listen "$port" >"$out.listen" 2>&1 &
  local listener=$!
  if ! "${base_env[@]}" NCCL_SOCKET_IFNAME="=$veth_a" "$@" ip netns exec "$ns_a" \
    "$cli" "${netbench_args[@]}" --plugin "$plugin" --peer "10.98.0.2:$port" \
    >"$out" 2>"$out.err"; then
    kill "$listener" 2>/dev/null || true
    die "run failed ($plugin $* across the veth pair): $(tail -n 3 "$out.err")"
  fi
  wait "$listener" || die "the listening side failed: $(tail -n 3 "$out.listen")"
}

median() { # numbers on stdin -> their median
  sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print 0; exit }
    print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# metric FILES... KEY INDEX : the median over the runs of results[INDEX].KEY
metric() {
  local key=${*: -2:1} index=${*: -1}
  local files=("${@:1:$#-2}")
  for f in "${files[@]}"; do jq -r ".results[$index].$key" "$f"; done | median
}

# per_invocation CASE WHO KEY INDEX : one line per invocation, the median over its runs
per_invocation() {
  local name=$1 who=$2 key=$3 index=$4 inv
  for ((inv = 1; inv <= invocations; inv++)); do
    metric "$results/$name.$inv.$who".*.json "$key" "$index"
  done
}

# summary CASE KEY INDEX -> "ours NCCL ratio lowest highest": the medians over the invocations
# of ours and of NCCL's, and the median, lowest and highest of the per-invocation ratios
summary() {
  local mine theirs ratios
  mine=$(per_invocation "$1" ours "$2" "$3")
  theirs=$(per_invocation "$1" nccl "$2" "$3")
  ratios=$(paste -d' ' <(echo "$mine") <(echo "$theirs") |
    awk '{ print ($2 > 0 ? $1 / $2 : 0) }' | sort -g)
  echo "$(median <<<"$mine") $(median <<<"$theirs") $(median <<<"$ratios")" \
    "$(head -n 1 <<<"$ratios") $(tail -n 1 <<<"$ratios")"
}

report() { # CASE TITLE
  local name=$1 title=$2
  local first=("$results/$name".1.ours.*.json)
  echo
  echo "## $name: $title"
  echo "# $invocations invocations of $runs alternating runs each: the median over the invocations of"
  echo "# each invocation's median; ratio = ours / NCCL's, with its range over the invocations"
  echo "# (GB/s: higher is better; p50, p99 and CPU s/GB: lower is better)"
  printf '%-6s | %7s %7s %6s %11s | %8s %8s %6s | %8s %8s %6s | %7s %7s %6s %11s\n' size \
    "GB/s" NCCL ratio range "p50 us" NCCL ratio "p99 us" NCCL ratio "cpu s/GB" NCCL ratio range
  local count i
  count=$(jq '.results | length' "${first[0]}")
  for ((i = 0; i < count; i++)); do
    local size row=() key
    size=$(jq -r ".results[$i].size" "${first[0]}")
    for key in bw_gbps lat_us_p50 lat_us_p99 cpu_s_per_gb; do
      row+=("$(summary "$name" "$key" "$i")")
    done
    awk -v size="$size" -v r="${row[*]}" 'BEGIN {
      split(r, v, " ")  # per key: ours, NCCL, ratio, lowest ratio, highest ratio
      s = size >= 1048576 ? size / 1048576 "M" : (size >= 1024 ? size / 1024 "K" : size)
      printf "%-6s | %7.3f %7.3f %5.2fx %5.2f-%5.2f | %8.1f %8.1f %5.2fx | %8.1f %8.1f %5.2fx | %7.3f %7.3f %5.2fx %5.2f-%5.2f\n",
        s, v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[11], v[12], v[13],
        v[16], v[17], v[18], v[19], v[20] }'
  done
}

# run_case CASE RUNNER NCCL_ENV... : INVOCATIONS sets of RUNS alternating pairs, then the table.
run_case() {
  local name=$1 runner=$2
  shift 2
  local inv r
  for ((inv = 1; inv <= invocations; inv++)); do
    for ((r = 1; r <= runs; r++)); do
      if (((r + inv) % 2)); then
        "$runner" "$results/$name.$inv.ours.$r.json" "$ours" "${ours_env[@]}"
        "$runner" "$results/$name.$inv.nccl.$r.json" "$shim" "$@"
      else
        "$runner" "$results/$name.$inv.nccl.$r.json" "$shim" "$@"
        "$runner" "$results/$name.$inv.ours.$r.json" "$ours" "${ours_env[@]}"
      fi
    done
  done
}

wrapped=$(strings "$shim" | grep -m1 '/libnccl\.so' || echo "libnccl.so.2")
code=$("$work/shim/version" "$wrapped" 2>/dev/null || echo 0) # 22809 = 2.28.9
version="$((code / 10000)).$(((code / 100) % 100)).$((code % 100))"
echo "# nccl-pilot's TCP transport vs NCCL's Socket transport (NCCL $version, $wrapped, through $shim_dir)"
echo "# sizes $sizes, $channels channel(s), $proto, at least $min_bytes per size and run; ours: ${OURS_ENV:-defaults}"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs; TCP congestion control $(sysctl -n net.ipv4.tcp_congestion_control 2>/dev/null || echo unknown)"

IFS=, read -r -a case_list <<<"$cases"
for c in "${case_list[@]}"; do
  case $c in
    loopback)
      run_case loopback run_loopback
      report loopback "127.0.0.1; NCCL's default here (no helper thread, one socket)"
      ;;
    aws)
      run_case aws run_loopback NCCL_SOCKET_NTHREADS=2 NCCL_NSOCKS_PERTHREAD=8
      report aws "127.0.0.1; NCCL with NCCL_SOCKET_NTHREADS=2 NCCL_NSOCKS_PERTHREAD=8 (AWS)"
      ;;
    gcp)
      run_case gcp run_loopback NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=1
      report gcp "127.0.0.1; NCCL with NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=1 (GCP)"
      ;;
    veth)
      if [[ $(id -u) -ne 0 ]] || ! make_veth; then
        echo
        echo "## veth: skipped (creating network namespaces, a veth pair and tc htb needs root)"
        continue
      fi
      run_case veth run_veth
      report veth "veth pair between two network namespaces, $([[ $rate == none ]] && echo unshaped || echo "tc htb rate $rate on each end")"
      ;;
    *) die "unknown case '$c' (loopback, aws, gcp, veth)" ;;
  esac
done
echo
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
