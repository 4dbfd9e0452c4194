# SPDX-License-Identifier: BSD-3-Clause
# kill-loop.sh -- sourced, after tests/tap.sh, by the scripts that drive
# origin-model over a remote origin (nbd-model.sh, tests/ceph/rbd-model.sh):
# SIGKILL during write-back is what those scripts are for, and hitting it
# takes the same aiming whatever the origin.
#
# kill_loop [-l LABEL] [-t TRIES] [-p POLL] ORIGIN READBACK...
#   $kills times, "$OM write ORIGIN $cache" (--model $model, --ops $ops,
#   --config $CONFIG, its output in $out) killed with SIGKILL at a random
#   moment of its final write-back, which the uninterrupted run measured
#   as $wb_ms ms; then READBACK... with k, delay and seed set (the kill's
#   number, how far into the write-back, the writer's seed), which recovers
#   the cache and checks the origin as TAP.  A writer whose write-back ends
#   first is run again, aimed earlier, up to TRIES times (8).  POLL is the
#   sleep between looks for the write-back's start (0.002).  LABEL starts
#   the TAP lines of its own.  Sets landed, the kills that hit a write-back;
#   returns 1 after a writer failed on its own.
# shellcheck disable=SC2154 # kills, OM, cache, ...: the caller's, as above
kill_loop() {
	local label='' max_tries=8 poll=0.002 origin opt OPTIND=1
	local k delay seed tries pid rc hit
	while getopts l:t:p: opt; do
		case $opt in
		l) label=$OPTARG ;;
		t) max_tries=$OPTARG ;;
		p) poll=$OPTARG ;;
		*) bail "kill_loop: bad option" ;;
		esac
	done
	shift $((OPTIND - 1))
	origin=$1
	shift
	landed=0
	for k in $(seq "$kills"); do
		hit=0
		for tries in $(seq "$max_tries"); do
			seed=$RANDOM
			"$OM" write "$origin" "$cache" --model "$model" --ops "$ops" --seed "$seed" \
				--config "$CONFIG" >"$out" 2>&1 &
			pid=$!
			while kill -0 "$pid" 2>/dev/null && ! grep -q '^writeback start' "$out"; do
				sleep "$poll"
			done
			# Anywhere in the first half of the write-back (noticing the
			# line and forking sleep take some ms); closer to its start
			# after each miss, and at once after four.
			delay=$(( tries > 4 ? 0 : RANDOM % (wb_ms / (2 * tries) + 1) ))
			sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
			if grep -q '^writeback done' "$out" || ! kill -KILL "$pid" 2>/dev/null; then
				wait "$pid"
				rc=$?
				if [ $rc != 0 ]; then
					not_ok "${label}kill $k: the writer failed on its own (seed $seed)"
					sed 's/^/#   /' "$out" | tail -5
					return 1
				fi
				continue # write-back ended before the kill: aim earlier
			fi
			wait "$pid" 2>/dev/null
			hit=1
			break
		done
		landed=$((landed + hit))
		[ "$hit" = 1 ] || note "${label}kill $k missed the write-back $max_tries times"
		"$@"
	done
	return 0
}
