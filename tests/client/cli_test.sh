#!/usr/bin/env bash
# Runs the real slackswap binary the way a user would and checks what it
# prints, writes and returns. Usage: cli_test.sh PATH_TO_SLACKSWAP
set -u
cli=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

check() {  # check NAME CONDITION...
  local name=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAILED: $name"
  fi
}
exit_code() { "$@" >"$work/out" 2>"$work/err"; echo $?; }
json_get() {  # json_get FILE PYTHON_EXPR_ON_d
  /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

# Usage errors exit 2 and say what to do.
check "no command exits 2" test "$(exit_code "$cli")" = 2
check "unknown command exits 2" test "$(exit_code "$cli" frobnicate)" = 2
check "unknown command is named" grep -q "unknown command 'frobnicate'" "$work/err"
check "bad budget exits 2" test "$(exit_code "$cli" simulate --budget lots)" = 2
check "bad budget explains" grep -q -- "--budget must be" "$work/err"
check "bad policy exits 2" test "$(exit_code "$cli" simulate --policy magic)" = 2
check "help exits 0" test "$(exit_code "$cli" help)" = 0
check "help lists simulate" grep -q "slackswap simulate" "$work/out"
check "version exits 0" test "$(exit_code "$cli" --version)" = 0
check "version names the release and the revision" \
  grep -qE '^slackswap [0-9]+\.[0-9]+\.[0-9]+ \(revision [^ ]+\)$' "$work/out"
check "unknown preset is a usage error" test "$(exit_code "$cli" generate --preset gpt-9)" = 2
check "unknown preset lists valid ones" grep -q "gpt2-xl" "$work/err"
check "unknown hardware is a usage error" test "$(exit_code "$cli" simulate --hardware tpu9)" = 2
check "unknown hardware lists valid ones" grep -q "a100" "$work/err"
check "missing hardware file is an error" test \
  "$(exit_code "$cli" simulate --hardware "$work/none.json")" = 1
check "zero fraction budget is a usage error" test "$(exit_code "$cli" simulate --policy all-keep --budget 0.0)" = 2
check "zero fraction budget names the field" grep -q "budget.fraction_of_peak" "$work/err"

# generate writes a trace in JSON and in binary; both simulate identically.
check "generate json" test "$(exit_code "$cli" generate --layers 4 --out "$work/t.json" \
  --hardware_out "$work/hw.json")" = 0
check "generate prints the hideable fraction" grep -q "hideable fraction" "$work/out"
check "generate binary" test "$(exit_code "$cli" generate --layers 4 --out "$work/t.pb")" = 0
check "trace json has operators" test "$(json_get "$work/t.json" "len(d['operators'])")" -gt 50
check "no --offload, no fixed transfers" test \
  "$(json_get "$work/t.json" "len(d.get('fixed_transfers', []))")" = 0

# --offload adds the job's own host-link traffic: FSDP fetches each layer's
# parameters twice (H2D) and copies its gradients out (D2H); the commands that
# take --preset plan around it.
check "generate --offload fsdp-cpu" test "$(exit_code "$cli" generate --layers 2 \
  --offload fsdp-cpu --out "$work/fsdp.json")" = 0
check "generate prints the fixed transfers" grep -q "^fixed transfers    6: " "$work/out"
check "fsdp-cpu: three transfers per layer" test \
  "$(json_get "$work/fsdp.json" "len(d.get('fixed_transfers', []))")" = 6
check "fsdp-cpu: a gradient copy per layer" test "$(json_get "$work/fsdp.json" \
  "sum(1 for x in d['fixed_transfers'] if x['direction'] == 'DIRECTION_D2H')")" = 2
check "plan --preset with --offload zero" test "$(exit_code "$cli" plan --layers 4 \
  --offload zero --budget 0.5)" = 0

# An unknown --offload mode is refused, naming the flag, by every command that
# generates.
check "bad --offload exits 2" test "$(exit_code "$cli" generate --offload bogus)" = 2
check "bad --offload names the flag" grep -q -- "--offload" "$work/err"
check "simulate refuses a bad --offload too" test \
  "$(exit_code "$cli" simulate --preset gpt2-xl --offload zero3)" = 2
check "simulate's refusal names the flag" grep -q -- "--offload" "$work/err"

"$cli" simulate --trace "$work/t.json" --hardware "$work/hw.json" --policy all-swap \
  --budget 0.5 --json >"$work/m_json.json"
"$cli" simulate --trace "$work/t.pb" --policy all-swap --budget 50% --json >"$work/m_pb.json"
check "json and binary traces simulate alike" cmp -s "$work/m_json.json" "$work/m_pb.json"
check "metrics outcome" test "$(json_get "$work/m_json.json" "d['outcome']")" = \
  SIMULATION_OUTCOME_COMPLETED

# A plan written by simulate replays to exactly the same metrics.
"$cli" simulate --trace "$work/t.pb" --policy all-swap --budget 0.5 --json \
  --plan_out "$work/plan.json" >"$work/m1.json"
"$cli" simulate --trace "$work/t.pb" --plan "$work/plan.json" --budget 0.5 --json >"$work/m2.json"
check "plan replay reproduces metrics" cmp -s "$work/m1.json" "$work/m2.json"
check "plan carries its offload order" test \
  "$(json_get "$work/plan.json" "len(d['offload_order'])")" -gt 10

# The timeline opens as Chrome trace-event JSON with every op in it.
"$cli" simulate --trace "$work/t.pb" --policy all-swap --budget 0.5 \
  --timeline "$work/timeline.json" >/dev/null
ops=$(json_get "$work/t.json" "len(d['operators'])")
spans=$(json_get "$work/timeline.json" "sum(1 for e in d['traceEvents'] if e['ph']=='X' and e.get('cat')=='op')")
check "timeline has one span per op" test "$spans" = "$ops"
stalls=$(json_get "$work/timeline.json" "sum(1 for e in d['traceEvents'] if e['ph']=='X' and e.get('cat')=='stall' and e['tid']==1)")
check "timeline shows the compute stream's stalls" test "$stalls" -gt 0

# Infeasible budgets are a result, not an error.
check "infeasible is exit 0" test "$(exit_code "$cli" simulate --trace "$work/t.pb" \
  --policy all-keep --budget 0.2)" = 0
check "infeasible says why" grep -q "INFEASIBLE: op" "$work/out"

# plan: a deterministic report, and a plan file that simulate replays to the
# same metrics.
"$cli" plan --trace "$work/t.pb" --budget 0.5 --json --plan_out "$work/sp.json" >"$work/r1.json"
"$cli" plan --trace "$work/t.pb" --budget 0.5 --json --report_out "$work/report.json" \
  >"$work/r2.json"
check "plan report is deterministic" cmp -s "$work/r1.json" "$work/r2.json"
# The report file carries the plan, its outcome and the budget it was made
# for: what the Python Runtime needs, and nothing else.
check "report file carries the budget" test "$(json_get "$work/report.json" \
  "d['metrics']['budget_bytes']")" = "$(json_get "$work/r1.json" "d['metrics']['budget_bytes']")"
check "report file carries the plan and outcome" test "$(json_get "$work/report.json" \
  "(d['outcome'], len(d['plan']['tensors']) > 0)")" = "('PLAN_OUTCOME_PLANNED', True)"
check "plan outcome" test "$(json_get "$work/r1.json" "d['outcome']")" = PLAN_OUTCOME_PLANNED
check "plan has a lower bound" test "$(json_get "$work/r1.json" "int(d['lower_bound_ns']) > 0")" = True
"$cli" simulate --trace "$work/t.pb" --plan "$work/sp.json" --budget 0.5 --json >"$work/m3.json"
check "planned metrics replay" test "$(/usr/bin/python3 -c "
import json, sys
print(json.load(open(sys.argv[1]))['metrics'] == json.load(open(sys.argv[2])))" \
  "$work/r1.json" "$work/m3.json")" = True
check "plan prints its lower bound" test "$(exit_code "$cli" plan --trace "$work/t.pb" --budget 0.6)" = 0
check "plan text names the bound" grep -q "lower bound" "$work/out"
check "plan infeasible is exit 0" test "$(exit_code "$cli" plan --trace "$work/t.pb" --budget 1MB)" = 0
check "plan infeasible says why" grep -q "INFEASIBLE: op" "$work/out"
check "bad ranking is a usage error" test "$(exit_code "$cli" plan --ranking random)" = 2
check "bad guard names the field" test "$(exit_code "$cli" plan --guard 2)" = 2
check "bad guard message" grep -q "options.guard_fraction" "$work/err"

# An invalid trace names the field.
/usr/bin/python3 - "$work/t.json" "$work/bad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["tensors"][3]["use_ops"][0] = 100000
json.dump(d, open(sys.argv[2], "w"))
PY
check "invalid trace exits 1" test "$(exit_code "$cli" simulate --trace "$work/bad.json")" = 1
check "invalid trace names the field" grep -q "trace.tensors\[3\].use_ops\[0\]" "$work/err"
check "missing trace file" test "$(exit_code "$cli" simulate --trace "$work/nope.pb")" = 1
check "plan rejects the invalid trace" test "$(exit_code "$cli" plan --trace "$work/bad.json")" = 1
check "plan names the field" grep -q "trace.tensors\[3\].use_ops\[0\]" "$work/err"

# compare: every policy at every budget, one table.
check "compare runs" test "$(exit_code "$cli" compare --trace "$work/t.pb" --budgets 0.6,0.8 \
  --policies slackswap,vdnn,checkpointing --json)" = 0
cp "$work/out" "$work/cmp.json"
check "compare has budgets x policies entries" test \
  "$(json_get "$work/cmp.json" "len(d['entries'])")" = 6
check "compare: slackswap at least as fast as the baselines" test "$(/usr/bin/python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
ok = True
for b in (0, 3):
    rows = d['entries'][b:b + 3]
    t = {r['policy']: int(r['report']['metrics']['iteration_ns']) for r in rows
         if r['report']['outcome'] == 'PLAN_OUTCOME_PLANNED'}
    ok &= all(t['POLICY_SLACKSWAP'] <= v for v in t.values())
print(ok)" "$work/cmp.json")" = True
check "compare rejects an unknown policy" test "$(exit_code "$cli" compare --policies magic)" = 2

# report --quick: the short evaluation checks its own invariants and writes
# valid SVG.
check "quick report runs" test "$(exit_code "$cli" report --quick --out_dir "$work/report")" = 0
check "quick report invariants hold" grep -q "Invariants hold" "$work/report/results.md"
check "quick report has the optimality table" grep -q "## 4. Optimality" "$work/report/results.md"
check "quick report figure is valid SVG" /usr/bin/python3 -c "
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag.endswith('svg') and len(root.findall('.//{http://www.w3.org/2000/svg}polyline')) == 5
" "$work/report/results/throughput-llama-7b.svg"

# bench-server: a bounded in-process run reports exactly the calls asked for;
# bad flags are usage errors.
check "bench-server --local runs" test "$(exit_code "$cli" bench-server --local \
  --preset llama-7b --layers 2 --requests 7 --warmup 100ms --json)" = 0
cp "$work/out" "$work/bench.json"
check "bench-server counts the calls" test \
  "$(json_get "$work/bench.json" 'd["calls"], d["ok"], d["target"]')" = "7 7 in-process"
check "bench-server reports its CPU time, no server's" test \
  "$(json_get "$work/bench.json" 'd["cpu_seconds"] > 0, d["server_cpu_seconds"]')" = "True None"
check "bench-server --local --planning_threads runs" test "$(exit_code "$cli" bench-server --local \
  --preset llama-7b --layers 2 --requests 5 --concurrency 3 --planning_threads 2 --json)" = 0
check "bench-server reports its planning threads" test \
  "$(json_get "$work/out" 'd["calls"], d["planning_threads"]')" = "5 2"
check "--planning_threads needs --local" test \
  "$(exit_code "$cli" bench-server --server 127.0.0.1:1 --planning_threads 2)" = 2
check "--planning_threads needs --local, it says" grep -q -- "--planning_threads goes with --local" "$work/err"
check "negative --planning_threads is a usage error" test \
  "$(exit_code "$cli" bench-server --local --planning_threads=-1)" = 2
check "negative --planning_threads is explained" grep -q -- "--planning_threads must be in \[0, 1024\]" "$work/err"
check "negative warm-up is a usage error" test \
  "$(exit_code "$cli" bench-server --local --warmup=-1s)" = 2
check "negative warm-up is explained" grep -q -- "--warmup must be >= 0" "$work/err"
check "bench-server needs a target" test "$(exit_code "$cli" bench-server)" = 2
check "--server_pid needs --server" test \
  "$(exit_code "$cli" bench-server --local --server_pid $$)" = 2
check "--server_pid needs --server, it says" grep -q -- "--server_pid goes with --server" "$work/err"
check "an unknown --server_pid is a usage error" test \
  "$(exit_code "$cli" bench-server --server 127.0.0.1:1 --server_pid 2147483647)" = 2
check "an unknown --server_pid is named" grep -q "no process 2147483647" "$work/err"

# A small trace (13 tensors) whose search ends at the exact optimum, proven
# by its exact stage: the statistics and the planner line say so.
small=(--preset gpt2-xl --layers 1 --batch 6 --seq 4096 --attention flash --hardware a100
  --budget 5089886208)
"$cli" plan "${small[@]}" --json >"$work/exact.json"
check "a small trace's plan is the proven optimum" test \
  "$(json_get "$work/exact.json" 'd["statistics"]["proven_optimal"], d["metrics"]["iteration_ns"]')" = \
  "True 86859702"
"$cli" plan "${small[@]}" >"$work/exact.txt"
check "the planner line says it is the optimum" grep -q "the exact optimum" "$work/exact.txt"

# The exact optimum: a repro case's proven optimum, printed as plan prints.
cases="$(cd "$(dirname "$0")/../planner/cases/optimality" && pwd)"
case69="$cases/chain69_floor"
check "optimum runs" test "$(exit_code "$cli" optimum --trace "$case69/trace.json" \
  --hardware "$case69/hw.json" --budget 87814886 --json)" = 0
cp "$work/out" "$work/optimum.json"
check "optimum finds the proven optimum" test \
  "$(json_get "$work/optimum.json" 'd["outcome"], d["metrics"]["iteration_ns"]')" = \
  "PLAN_OUTCOME_PLANNED 1163128"
"$cli" plan --trace "$case69/trace.json" --hardware "$case69/hw.json" --budget 87814886 \
  --json >"$work/plan69.json"
check "optimum --json has plan --json's shape" test \
  "$(json_get "$work/optimum.json" 'sorted(d)')" = "$(json_get "$work/plan69.json" 'sorted(d)')"
check "optimum --plan_out replays to its time" test "$(exit_code "$cli" optimum \
  --trace "$case69/trace.json" --hardware "$case69/hw.json" --budget 87814886 \
  --plan_out "$work/opt.plan.json")" = 0
"$cli" simulate --trace "$case69/trace.json" --hardware "$case69/hw.json" --budget 87814886 \
  --plan "$work/opt.plan.json" --json >"$work/opt_replay.json"
check "the optimal plan replays" test \
  "$(json_get "$work/opt_replay.json" 'd["iteration_ns"]')" = 1163128
check "optimum refuses a large trace" test "$(exit_code "$cli" optimum --preset gpt2-xl \
  --layers 2 --budget 0.5)" = 1
check "optimum names the field" grep -q "trace.tensors" "$work/err"
check "a proven infeasible budget" test \
  "$(exit_code "$cli" optimum --trace "$case69/trace.json" --hardware "$case69/hw.json" \
  --budget 87814885 --json)" = 0
check "below the floor the optimum has no plan" test \
  "$(json_get "$work/out" 'd["outcome"]')" = PLAN_OUTCOME_INFEASIBLE

# An infeasible answer names the floor and the smallest budget SlackSwap meets;
# the frontier starts at the floor; --lp_bound reports the bound's source.
check "plan below the floor" test "$(exit_code "$cli" plan --preset gpt2-xl --layers 2 \
  --budget 1000)" = 0
check "the answer names the proven floor" grep -q "no plan fits below" "$work/out"
check "and the smallest budget SlackSwap meets" grep -q "SlackSwap plans from" "$work/out"
check "plan --lp_bound" test "$(exit_code "$cli" plan --preset gpt2-xl --layers 2 \
  --budget 0.3 --lp_bound --json)" = 0
check "the bound says its source" grep -q '"lower_bound_source"' "$work/out"
check "frontier from the floor" test "$(exit_code "$cli" frontier --preset gpt2-xl \
  --layers 2 --json)" = 0
check "frontier points start at or above the proven floor" test "$(json_get "$work/out" \
  'all(int(p["budget_bytes"]) >= int(d["proven_floor_bytes"]) for p in d["points"])')" = True

# study: SlackSwap against the other searches on traces drawn from seeds.
check "study runs" test "$(exit_code "$cli" study --first_seed 7 --traces_per_kind 1 \
  --kinds small,chain --genetic_evaluations 300 --json)" = 0
check "study: one cell per kind, trace and level" test "$(json_get "$work/out" \
  'sorted((c["kind"], c["level"]) for c in d["cells"]) == sorted((k, l) for k in ("small", "chain") for l in ("floor", "+2%", "+10%", "+30%"))')" = True
check "study: each loss is the iteration over the best plan found" test "$(json_get "$work/out" \
  'sum(c["outcome"] == "planned" for c in d["cells"]) >= 5 and all(abs(c["loss"] - (c["iteration_ns"] / c["best_ns"] - 1)) < 1e-6 and c["best_ns"] <= c["iteration_ns"] for c in d["cells"] if c["outcome"] == "planned")')" = True
check "study: the exact optimum on the small trace" test "$(json_get "$work/out" \
  'all("optimum_ns" in c for c in d["cells"] if c["kind"] == "small" and c["outcome"] == "planned")')" = True
check "study: the summary's worst is the worst cell's" test "$(json_get "$work/out" \
  'abs(d["summary"]["loss_worst"] - max(c.get("loss", 0) for c in d["cells"])) < 1e-6 and d["summary"]["cells"] == 8')" = True
check "study without references" test "$(exit_code "$cli" study --first_seed 7 \
  --traces_per_kind 1 --kinds small --references=false --json)" = 0
check "study without references: SlackSwap alone" test "$(json_get "$work/out" \
  'len(d["cells"]) == 4 and not any("best_other_ns" in c or "loss" in c for c in d["cells"]) and "loss_p99" not in d["summary"]')" = True
check "study rejects an unknown kind" test "$(exit_code "$cli" study --kinds chain,magic)" = 2
check "study names the kinds" grep -q -- "--kinds: unknown kind 'magic'; the kinds are chain" "$work/err"
check "study rejects no traces" test "$(exit_code "$cli" study --traces_per_kind 0)" = 2
check "study names the flag" grep -q -- "--traces_per_kind must be" "$work/err"

echo "$passed passed, $failed failed"
test "$failed" = 0
