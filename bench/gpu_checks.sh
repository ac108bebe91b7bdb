#!/usr/bin/env bash
# The GPU paths, checked for real in one prepared script (no GPU in CI; tests use the
# real H100 files in ../shared/data/gpu instead). Each part fits a 10-minute command.
#
#   bash bench/gpu_checks.sh OUT_DIR PART [CIFAR10_TGZ]
#
# PART: `session` (what matters in one leased command, inside $BUDGET_S seconds, default 540:
# the steps in $STEPS, default "ncu_rep run op_agreement ablation parity", in that order, each
# cut to the time left, all output in one session.txt: a .ncu-rep read back through
# ncu_report, the CUPTI probe (`probe`), `--calibrate` on this chip (`calibrate`), the real-data `run` ($COUNTERS=cupti checks the
# fallback to ncu), bench op_agreement on the GPU ($REPEATS runs, default 3), bench
# capture_ablation ($ROUNDS rounds, default 3), `parity` with $PAIRS pairs (default 2)),
# `counters` (versions, quick peaks, --calibrate on this chip, a .ncu-rep read through
# ncu_report, the CUPTI probe and its fallback), `run` (real-data cifar10 on cuda with --counters
# ncu, its roofline text), `parity` (capture on/off pairs on the GPU: bench/overhead.py's cuda
# arm). CIFAR10_TGZ (default ../shared/data/cifar10-jpeg.tar.gz) is extracted for `run` and
# `parity`; without it they use synthetic data and say so. Needs CUDA PyTorch, ncu on PATH (or
# $PERFSUITE_NCU) and perfsuite's dependencies importable (PYTHONPATH is honoured). Every
# command's output lands in OUT_DIR; run folders are packed without their checkpoints.
set -u
out=${1:?usage: gpu_checks.sh OUT_DIR PART [CIFAR10_TGZ]}
part=${2:?PART is session, counters, run or parity}
tgz=${3:-../shared/data/cifar10-jpeg.tar.gz}
py=${PYTHON:-python3}
mkdir -p "$out"
log() { echo "== $(date +%T) $*" | tee -a "$out/steps.txt"; }
deadline=$(($(date +%s) + ${BUDGET_S:-100000}))
# run a step with a limit (cut to the time left before the deadline); its rc goes to steps.txt
# and the script goes on
step() {
	local name=$1 limit=$2
	shift 2
	local left=$((deadline - $(date +%s) - 5))
	[ "$left" -lt "$limit" ] && limit=$left
	if [ "$limit" -lt 10 ]; then
		log "$name: skipped, no time left"
		return
	fi
	log "$name: $*"
	local dest="$out/$name.txt"
	if [ -n "${one_log:-}" ]; then # session: one file, since 8 files at most come back
		dest="$out/session.txt"
		echo "### $name" >>"$dest"
	fi
	local rc=0
	timeout "$limit" "$@" >>"$dest" 2>&1 || rc=$?
	log "$name: rc $rc"
	tail -n 40 "$dest"
}
cifar_dir() {
	if [ -f "$tgz" ]; then
		local dir=${TMPDIR:-/tmp}/perfsuite-gpu-cifar10
		if [ ! -d "$dir/train" ]; then
			mkdir -p "$dir" && tar -xzf "$tgz" -C "$dir"
		fi
		echo "$dir"
	fi
}
pack() { # a run folder without its checkpoint, for a size-limited copy back
	tar --exclude=threshold_model.pt -czf "$out/$1.tgz" -C "$2" .
}

do_run() {
	local data src runs=${TMPDIR:-/tmp}/perfsuite-gpu-runs
	rm -rf "$runs"
	data=$(cifar_dir)
	src=(--synthetic)
	[ -n "$data" ] && src=(--data-dir "$data")
	# latency on the first 1,000 test images only (the record marks it partial): the full
	# DAWNBench pass takes ~50 s at batch 1 and says nothing about counters or the clock
	step run "${RUN_LIMIT:-540}" "$py" -m perfsuite run cifar10 "${src[@]}" --device cuda --epochs 3 \
		--counters "${COUNTERS:-ncu}" --inference-limit 1000 --quiet --out "$runs"
	for d in "$runs"/*/; do
		step roofline 60 "$py" -m perfsuite roofline "$d"
		pack run "$d"
	done
}
bench_data() { # where the benches look for an extracted CIFAR-10 (bench/overhead.py)
	local data
	data=$(cifar_dir)
	if [ -n "$data" ]; then
		mkdir -p /tmp/perfsuite-bench-cifar10 && cp -rn "$data"/. /tmp/perfsuite-bench-cifar10/
	fi
}
do_parity() {
	bench_data
	export PERFSUITE_BENCH_GPU_ONLY=1 PERFSUITE_BENCH_GPU_PAIRS=${PAIRS:-6}
	step parity 570 "$py" -m bench overhead
}
ncu_rep() { # the GEMM probe exported as .ncu-rep, read back through ncu_report
	local rep="$out/gemm" cmd
	cmd=$("$py" -c "import shlex, sys; from perfsuite.counters.ncu import ncu_command; \
print(shlex.join(ncu_command([sys.executable, '-m', 'perfsuite.counters.gemm_probe'], \
nvtx_range='perfsuite.calibrate', export='$rep')))")
	step ncu_rep_capture 300 sh -c "$cmd"
	step ncu_rep_read 120 "$py" -m perfsuite counters "$rep.ncu-rep"
	# the report comes back too (3 kernels, small): `pip install ncu-report` reads it anywhere,
	# so the ncu_report path can be checked without a GPU
}
probe_cupti() {
	step cupti_probe 120 "$py" -c "from perfsuite.counters.collect import cupti_range_profiler_available as a; print(a())"
}

case $part in
session)
	[ -z "${BUDGET_S:-}" ] && deadline=$(($(date +%s) + 540))
	one_log=1
	step env 30 sh -c "nvidia-smi -L; $py -c 'import torch; print(torch.__version__, torch.version.cuda)'; ncu --version"
	for what in ${STEPS:-ncu_rep run op_agreement ablation parity}; do
		case $what in
		ncu_rep) ncu_rep ;;
		probe) probe_cupti ;;
		calibrate) step calibrate 240 "$py" -m perfsuite counters --calibrate --json ;;
		run) do_run ;;
		op_agreement)
			bench_data
			step op_agreement 240 env PERFSUITE_BENCH_GPU_ONLY=1 \
				PERFSUITE_BENCH_REPEATS="${REPEATS:-3}" "$py" -m bench op_agreement
			;;
		ablation)
			bench_data
			step ablation 400 env PERFSUITE_BENCH_GPU_ONLY=1 \
				PERFSUITE_BENCH_ROUNDS="${ROUNDS:-3}" "$py" -m bench capture_ablation
			;;
		parity) PAIRS=${PAIRS:-2} do_parity ;;
		*) log "unknown step $what (ncu_rep probe calibrate run op_agreement ablation parity)" ;;
		esac
	done
	;;
counters)
	step env 60 sh -c "nvidia-smi -L; $py -c 'import torch; print(torch.__version__, torch.version.cuda)'; ncu --version"
	step peaks 240 "$py" -m perfsuite peaks --device cuda --quick --json
	step calibrate 300 "$py" -m perfsuite counters --calibrate --json
	ncu_rep
	step cupti 420 "$py" -m perfsuite run cifar10 --synthetic --device cuda --epochs 1 \
		--counters cupti --quiet --out "$out/runs-cupti"
	"$py" -c "import json, glob; r = json.load(open(glob.glob('$out/runs-cupti/*/run.json')[0])); \
print('counters:', (r.get('counters') or {}).get('tool')); print('flags:', r.get('flags'))" \
		>>"$out/cupti.txt" 2>&1
	;;
run)
	do_run
	;;
parity)
	do_parity
	;;
*)
	echo "unknown PART $part (session, counters, run or parity)" >&2
	exit 2
	;;
esac
