#!/bin/sh
# Catch rate of `idemtest check --only concurrent` against the reference server's naive mode:
# RUNS runs per window, each a fresh battery (default budget 2s, fan-out 8), the time each run
# took to its verdict, with the idemtest binary given as $1 (build one from main and one from
# this tree to compare). Usage: bench/checkrace/run.sh IDEMTEST [RUNS]
set -u
bin=$1
runs=${2:-20}
dir=$(mktemp -d)
go build -o "$dir/refundserver" ./examples/refundserver
for work in 0 1us; do
	cat >"$dir/c.yaml" <<YAML
services:
  refundserver:
    command: [$dir/refundserver, --addr, "127.0.0.1:{{ port }}", --idempotency, naive, --work, "$work"]
    ready: {http: "http://127.0.0.1:{{ port }}/healthz"}
endpoints:
  refunds:
    http: {url: "http://127.0.0.1:{{ services.refundserver.port }}/tools/{tool}"}
    mutating: [issue_refund]
check:
  tools:
    issue_refund: {args: {accountId: "acct_{{ session }}", amount: 12.5}}
YAML
	caught=0
	times=""
	i=0
	while [ $i -lt "$runs" ]; do
		i=$((i + 1))
		start=$(date +%s%N)
		"$bin" check --no-color --config "$dir/c.yaml" --endpoint refunds --tool issue_refund --only concurrent >"$dir/out" 2>&1
		rc=$?
		end=$(date +%s%N)
		if [ $rc -eq 1 ] && grep -q '^✗ issue_refund concurrent' "$dir/out"; then
			caught=$((caught + 1))
			times="$times $(((end - start) / 1000000))"
		fi
	done
	med=$(echo $times | tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "-"}')
	echo "work=$work caught=$caught/$runs median_ms_to_catch=$med"
done
rm -rf "$dir"
