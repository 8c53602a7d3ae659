# Shared by .ci/bench-ratio, .ci/bench-floorgen and .ci/bench-ablate
# (sourced): the floor at N calls, the server driven by the floor's
# generator, and the median of the rounds' ratios.

# floor_us TEST_BINARY N: the floor's server CPU per frame over
# coder/websocket at N calls (session/native's BenchmarkFloorCalls).
floor_us() {
  FRONTDOOR_FLOOR_CALLS=$2 "$1" -test.run '^$' -test.bench 'FloorCalls/websocket' -test.benchtime 1x -test.timeout 10m |
    sed -n 's/.* \([0-9.]*\) server-µs\/frame.*/\1/p'
}

# floorgen_us FRONTDOOR_BIN TEST_BINARY N: the server's CPU per frame at N
# calls, the frontdoor binary serving the media benchmark's stubs and the
# floor's generator driving it (session/native's BenchmarkFloorGenerator).
# The server inherits the environment (FRONTDOOR_ABLATE, for a build with
# -tags frontdoor_ablate). Run it in a command substitution, as the
# scripts do: its EXIT trap, which stops the server however the run ends,
# is then the subshell's. A server that is not ready in 10 s, or a
# generator that hangs for 10 minutes, gives no figure.
floorgen_us() {
  local addr="127.0.0.1:${FRONTDOOR_BENCH_PORT:-18474}" pid out ready=""
  "$1" serve -listen "$addr" -log-format json -drain-timeout 2s -model stub -synth stub -recognize stub \
    -max-conns 0 -max-conns-per-addr 0 -max-handshakes-per-addr 0 \
    -session-slots 2000 -model-slots 2000 -model-queue 100 -synth-slots 2000 -synth-queue 100 \
    -stub-model-delay 0 -stub-token-delay 0 -stub-synth-delay 0 -stub-frame-count 1500 -stub-frame-delay 20ms 2>/dev/null &
  pid=$!
  trap 'kill "$pid" 2>/dev/null || true' EXIT
  for _ in $(seq 100); do curl -fs "http://$addr/readyz" >/dev/null 2>&1 && { ready=1; break; }; sleep 0.1; done
  if [ -n "$ready" ]; then
    out="$(FGEN_ADDR="$addr" FGEN_PID="$pid" FGEN_CALLS="$3" timeout 600 "$2" -test.run '^$' -test.bench FloorGenerator -test.benchtime 1x)" || true
  fi
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  echo "$out" | sed -n 's/.* \([0-9.]*\) server-µs\/frame.*/\1/p'
}

# ratio A B: A/B to two decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }

# medians RESULTS "N...": for each N, the median of the ratios recorded as
# "N ratio" lines in RESULTS (N may be "N/variant").
medians() {
  for n in $2; do
    awk -v n="$n" '$1 == n {print $2}' "$1" | sort -n |
      awk -v n="$n" '{v[NR]=$1} END {sub("/", " calls, ", n); if (n !~ / calls, /) n = n " calls"; m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2; printf "%s: median ratio %.2f over %d rounds (min %.2f, max %.2f)\n", n, m, NR, v[1], v[NR]}'
  done
}
