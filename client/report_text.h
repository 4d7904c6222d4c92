// File: report_text.h
//
// The prose of docs/results.md (report.cc writes it), as templates: each
// {name} is filled in by the report, with the paper's figures from
// paper_figures.h or with a count of its own. The tables, figures and
// measured sentences are the report's code.
#ifndef SLACKSWAP_CLIENT_REPORT_TEXT_H_
#define SLACKSWAP_CLIENT_REPORT_TEXT_H_

namespace slackswap::report_text {

// The head of docs/results.md; the quick note and the bars follow it.
inline constexpr char kHeader[] =
    R"md(# Results: the paper's evaluation, reproduced

Regenerate with `bash scripts/report.sh` (`slackswap report --out_dir docs`), which builds every trace with the workload generator, runs every policy, and rewrites this file and the figures under `docs/results/`. All results are simulated with the event model (`docs/event-model.md`) on the calibrated presets (`docs/workloads.md`); the paper's figures are simulated too, with its own simulator. Plan quality is deterministic; planning times vary from run to run.

)md";

// Section 1; a table and a figure per model follow.
inline constexpr char kThroughputIntro[] =
    R"md(## 1. Throughput against the memory budget

Percent of ideal throughput (ideal iteration time / planned iteration time) at each budget, as a fraction of the all-keep peak, on the A100 preset (the paper's Figure 4). "vs best" is SlackSwap's throughput over the best baseline's.

)md";

// Section 2 and its table header. {step_ms} ... {stall}: paper_figures.h.
inline constexpr char kWhereTimeGoesIntro[] = R"md(## 2. Where the time goes

Step time, and the shares of it spent recomputing and stalled (prefetch, memory and barrier waits), at 40% and 50% of peak.

Paper: GPT-2 XL at 50%: SlackSwap {step_ms} ms against {ideal_ms} ms ideal, vDNN {vdnn_ms} ms, block checkpointing re-runs {checkpointing_share}% of the step. At 40%: SlackSwap recomputes {gpt_recompute}% (GPT-2 XL) and {llama_recompute}% (Llama-7B) of the step, stalls below {stall}%.

| Model | Budget | Policy | Step (ms) | Ideal (ms) | Recompute share | Stall share |
|---|---|---|---|---|---|---|
)md";

// Section 3 and its table header.
inline constexpr char kAblationsIntro[] = R"md(## 3. Ablations

Points of ideal throughput lost against full SlackSwap when swap candidates are ranked by production time, without the link-budget pass (recomputation only), and with vDNN-style per-layer barriers.

Paper: {production_order} points (production order), {no_link_budget} (no link-budget pass), {barriers} (barriers).

| Model | Budget | SlackSwap | Production order | No link-budget pass | Barriers |
|---|---|---|---|---|---|
)md";

// Section 4 and its table header.
inline constexpr char kOptimalityIntro[] = R"md(## 4. Optimality

Each setup of table 1 against a genetic search over keep / swap / recompute plans and prefetch points, seeded with SlackSwap's plan, and against the lower bound (`docs/planner.md`). Planning times are one run on this machine and include the linear-program bound (about 10 ms; without it `docs/benchmarks.md`).

Paper: within {search_gap}% of a seeded genetic search over {search_plans} plans; at most {planning_ms} ms per plan.

| Model | Budget | SlackSwap (ms) | Search best (ms) | SlackSwap above search | Plans searched | Lower bound (ms) | SlackSwap above bound | SlackSwap planning | Search time |
|---|---|---|---|---|---|---|---|---|---|
)md";

// Section 5 and its table header.
inline constexpr char kBoundGapIntro[] =
    R"md(## 5. Against the lower bound, 20% to 90%

SlackSwap's iteration above the lower bound: the larger of the fast bound and the linear program's (`docs/planner.md`; the source column says which), on the A100 preset. Target: within 1%.

| Model | Budget | SlackSwap (ms) | Lower bound (ms) | Source | Above bound |
|---|---|---|---|---|---|
)md";

// Section 6; {traces}: the number of random small traces.
inline constexpr char kSmallTracesIntro[] =
    R"md(## 6. Against the exact optimum on small traces

{traces} random small traces (`simulator/small_traces.h`, seeds 1 to {traces}: 2 to 9 tensors of odd sizes, zero durations, optimizer ops, shared recompute inputs, blocks, forbidden decisions, random links), each at five budgets: one byte below its memory floor, the floor (the smallest budget at which the exact optimum plans), 25% and 60% of the way from the floor to the all-keep peak, and the peak. The optimum is the exact branch and bound over every decision and issue point (`planner/optimum.h`). Gaps are a policy's iteration over the optimum's, over the budgets where both plan.

)md";

// Section 7 and its table header.
inline constexpr char kFloorsIntro[] = R"md(## 7. Memory floors

Below its floor no plan fits: some op must hold more bytes at its start, in every plan, than the budget (the op's allocation and workspace, what forward ops from it on still read, and what backward ops up to it have needed and later ones still read; `lower_bound.h`, ComputeProvenFloor). SlackSwap's smallest budget is found by bisection to 1/10,000 of the peak.

| Model | Floor | Op that sets it | SlackSwap plans from |
|---|---|---|---|
)md";

// Section 8 and its table header.
inline constexpr char kLinkSweepIntro[] = R"md(## 8. Link bandwidth sweep

GPT-2 XL at 30% of peak on the A100 preset with the host link set to each bandwidth (both directions; the trace's op times stay the A100's).

Paper: at 12 GB/s {swapped_12} GB swapped and {recomputed_12} GB recomputed; at 200 GB/s {swapped_200} GB swapped and none recomputed; SlackSwap {lead} points above the best baseline.

| Link (GB/s) | Swapped (GB) | Recomputed (GB) | SlackSwap | Best baseline | Lead (points) |
|---|---|---|---|---|---|
)md";

// Section 9 and its table header.
inline constexpr char kGpuSweepIntro[] = R"md(## 9. GPUs

Each model at 30% of peak on the V100, A100 and H100 presets (traces generated for each GPU).

Paper: SlackSwap {ratio}x the best baseline at 30%.

| Model | GPU | SlackSwap | Best baseline | SlackSwap / best |
|---|---|---|---|---|
)md";

// Section 10 and its table header.
inline constexpr char kSequenceSweepIntro[] = R"md(## 10. Sequence length

Llama-7B (batch 1) from 2K to 32K tokens on the A100 preset at 50% of peak.

Paper: the hideable fraction rises from {hideable_from}% to {hideable_to}%; SlackSwap from {slackswap_from}% to {slackswap_to}% of ideal.

| Tokens | Hideable | SlackSwap | Best baseline | Swapped (GB) | Recomputed (GB) |
|---|---|---|---|---|---|
)md";

// Section 11 and its table header.
inline constexpr char kAllocatorIntro[] =
    R"md(## 11. The caching allocator's reserved memory

Beyond the paper (issue 17): PyTorch's CUDA caching allocator, modelled over each plan's allocations and frees (docs/event-model.md, "Caching allocator"), on the A100 preset. "Resident" is SlackSwap's plan for a resident budget, with its peak resident bytes and the peak reserved bytes of the same plan under the native allocator ("caching") and with expandable segments; "frag." is reserved minus allocated at the reserved peak. "Reserved budget" plans so that the reserved peak stays within the same budget (docs/planner.md, "Planning under the caching allocator"): its throughput, and the resident budget the plan was made for, as a % of the budget.

| Model | Budget | Resident: % ideal | Peak resident | Caching: reserved | frag. | Expandable: reserved | frag. | Reserved budget, caching: % ideal | planned for | Reserved budget, expandable: % ideal | planned for |
|---|---|---|---|---|---|---|---|---|---|---|---|
)md";

// Section 12 and its table header.
inline constexpr char kUplinkIntro[] =
    R"md(## 12. GPUs that share one host uplink

Beyond the paper (issue 17): G GPUs behind one PCIe 4.0 uplink of 25 GB/s per direction (a DGX A100 has 2 per switch), each rank of the job running the same plan in lockstep, replayed in the shared-uplink model (docs/event-model.md, "Shared uplink"), on the A100 preset. Three plans for each: (a) the single-GPU plan, unaware of the sharing; (b) a plan for the link divided by 1 + log2 G (the derate some frameworks apply); (c) SlackSwap planning against the shared uplink. % of ideal throughput, all three replayed in the same shared model.

| Model | Budget | GPUs per uplink | (a) single-GPU plan | (b) derated link | (c) planned for the shared uplink |
|---|---|---|---|---|---|
)md";

// Section 13 and its table header.
inline constexpr char kContentionIntro[] =
    R"md(## 13. Copies that slow memory-bound kernels

Beyond the paper (issue 17): with HBM contention on, an operator with a memory-traffic figure runs, while copies move bytes, at the speed of its roofline with the HBM bandwidth they leave (docs/event-model.md, "HBM contention"). The GH200 (NVLink-C2C, 300/345 GB/s against 4 TB/s of HBM) and the H100 PCIe 5 presets: the plan made without contention, replayed with it off and on, and the plan made with it, replayed with it on. Iteration times in ms; "slowed" is the time operators ran beyond their profiled durations.

| Model | GPU | Budget | Plan without: contention off | on | slowed | Plan with contention: on | slowed |
|---|---|---|---|---|---|---|---|
)md";

inline constexpr char kSpeedsIntro[] =
    R"md(## 14. Plans at other speeds

Beyond the paper (issue 26): a real step never runs at exactly the profiled speeds. The event model admits a prefetch only if every compute step before its deadline still fits with it (docs/event-model.md, "Prefetch admission"), so a plan that completes at the profiled speeds completes within its budget at every speed. The rule before it (a prefetch starts when its tensor fits now) could deadlock at other speeds.

**What the rule costs.** SlackSwap's passes (the anytime search of section 15 off: it replays by the any-speed rule only) under the any-speed rule against the same under the fits-now rule, change in the iteration in percent, on every preset and GPU from 20% to 90% of the all-keep peak ("-": no plan under either rule, below the floor).

)md";

inline constexpr char kSpeedsRobustness[] =
    R"md(**How robust the plans are.** Each plan's report carries its replays at four fixed scalings: the link at half and twice its speed, and kernels 20% faster and 20% slower (`metrics.scaled`). The table lists % of ideal, each at its own speed, with the worst of the four. The last column takes the plan made under the fits-now rule and replays it under that rule at those four scalings and at the link x4 and kernels x2. It lists the scalings where that plan deadlocks. Under the any-speed rule none does.

| Model | GPU | Budget | Profiled | Link x0.5 | Link x2 | Kernels x0.8 | Kernels x1.2 | Worst | Fits-now plan deadlocks at |
|---|---|---|---|---|---|---|---|---|---|
)md";

inline constexpr char kBeyondSmallIntro[] =
    R"md(## 15. Beyond the traces SlackSwap was tuned on

Issue 27: traces of kinds the passes were not tuned on, from seeds not used while building the search (planner/beyond_small.h): deep chains, branched blocks and random DAGs of 20 to 300 tensors on GPU links from 0.25x to 4x a preset's (simulator/medium_traces.h), the workload presets with their layers, batch, sequence and attention varied on every GPU, random small traces of at most 16 tensors, and DAGs on two GPUs behind a shared uplink: 16 traces of each kind, from seeds 201 to 216 (the uplink kind's DAGs from 1201 to 1216), so that the p99 of the losses is not the worst cell. Budgets: the proven floor, and 2%, 10% and 30% of the way from it to the all-keep peak. SlackSwap with its defaults (the anytime search, 160 ms, 0.5% gap target) and with its passes alone, against the best plan of a genetic search at 20,000 evaluations seeded with SlackSwap's plan, all-keep and all-swap, SwapAdvisor, block checkpointing, and the exact optimum on the small traces. "No plan" counts cells where SlackSwap found none but another search did (above the floor SlackSwap answers INFEASIBLE only where its exact stage searched every plan of a small trace and found none). Losses are SlackSwap's iteration over the best any search found. Planning times are wall-clock on this machine's two cores (the search replays on two threads), the median of three runs per cell (each run gives the same plan, checked).

| Kind | Cells | No plan: passes | No plan: with search | Loss median | p90 | Worst | Over 1% | Over 5% | Slowest plan |
|---|---|---|---|---|---|---|---|---|---|
)md";

inline constexpr char kOffloadIntro[] =
    R"md(## 16. The job's own host traffic

Issue 30: a job that offloads more than activations already moves bytes over the host link (docs/workloads.md, "Offload modes"; docs/event-model.md, "Fixed transfers"). GPT-2 XL and Llama-7B in bf16, one unit per layer, with ZeRO-Offload (`zero`), ZeRO-Offload with the delayed parameter update (`zero-dpu`) and FSDP with CPU offload (`fsdp-cpu`); budgets are a share of the all-keep peak with the traffic (FSDP's parameter copies hold GPU memory). Three plans, each replayed with the traffic at the same budget: (a) SlackSwap planning the trace without the traffic, its predicted % of ideal and what the replay gives; (b) SlackSwap planning without the traffic for links derated by its average share of each direction over the ideal iteration (H2D / D2H share below; what dividing the measured bandwidth does); (c) SlackSwap planning with the traffic. % of ideal is the traffic-free ideal iteration over the replayed one; "stuck": the replay cannot fit the traffic's memory (FSDP's parameter copies, ZeRO's gradients waiting for the link) beside the plan's, and says what the step it stopped at waited for. For (c), its stall by cause in ms (waiting for fixed transfers / prefetches / memory, then the recompute time) and how far it is above its lower bound (docs/planner.md, "Planning around the job's own host traffic").

| Model | GPU | Budget | Offload | Traffic share H2D / D2H | (a) without the traffic: predicted → replayed | (b) derated link | (c) with the traffic | (c) fixed / prefetch / memory stall / recompute, ms | (c) above its bound |
|---|---|---|---|---|---|---|---|---|---|
)md";

inline constexpr char kOffloadLeftOut[] =
    R"md(What the model leaves out: the host's CPU optimizer step (ZeRO's and FSDP's `optimizer.step()` between the last gradient's arrival and the first updated parameter's departure: the model starts each parameter copy as soon as its op allows), host memory bandwidth, and data parallelism's collectives. Where the traffic alone takes the link longer than the compute (Llama-7B's 13.5 GB per direction at 25 GB/s), no plan comes near the ideal: the iteration is the traffic's.

)md";

// The closing section.
inline constexpr char kWhyTheBaselines[] =
    R"md(## Why the baselines land where they do

- **vDNN** swaps by memory alone, in production order, and waits at every layer for its offloads and prefetches. At 50% it must move about half the activations over a link that can hide a fraction of them during the forward pass, so the barriers expose nearly all of the transfer time.
- **SuperNeurons** recomputes cheap ops' outputs (normalization, GeLU, dropout) and swaps the matmul and attention outputs, with vDNN's barriers. Recomputing the cheap bytes first leaves fewer bytes for the link than vDNN, so it stalls less; the swaps still exceed what the link hides. Residual outputs, whose rebuild would rerun a matmul, are kept, as SuperNeurons keeps the tensors it recomputes from.
- **SwapAdvisor** searches swap sets and prefetch points without barriers but cannot recompute: whatever the budget leaves beyond the link's capacity must cross the link anyway, and the search can only hide it better, not avoid it.
- **Block checkpointing** recomputes whole layers from their inputs and leaves the link idle: every dropped byte costs recompute time, including the matmul outputs that SlackSwap swaps for free.

)md";

}  // namespace slackswap::report_text

#endif  // SLACKSWAP_CLIENT_REPORT_TEXT_H_
