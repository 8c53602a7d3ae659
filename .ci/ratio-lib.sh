# Shared by .ci/bench-ratio and .ci/bench-floorgen (sourced): the floor at
# N calls and the median of the rounds' ratios.

# floor_us TEST_BINARY N: the floor's server CPU per frame over
# coder/websocket at N calls (session/native's BenchmarkFloorCalls).
floor_us() {
  FRONTDOOR_FLOOR_CALLS=$2 "$1" -test.run '^$' -test.bench 'FloorCalls/websocket' -test.benchtime 1x -test.timeout 10m |
    sed -n 's/.* \([0-9.]*\) server-µs\/frame.*/\1/p'
}

# ratio A B: A/B to two decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }

# medians RESULTS "N...": for each N, the median of the ratios recorded as
# "N ratio" lines in RESULTS.
medians() {
  for n in $2; do
    awk -v n="$n" '$1 == n {print $2}' "$1" | sort -n |
      awk -v n="$n" '{v[NR]=$1} END {m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2; printf "%s calls: median ratio %.2f over %d rounds (min %.2f, max %.2f)\n", n, m, NR, v[1], v[NR]}'
  done
}
