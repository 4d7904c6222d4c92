// File: wire_convert.h
//
// The edge between the wire types (slackswap.v1) and the internal types, for
// everything but the trace (trace_convert.h): hardware, budgets, plans,
// options, policies and precisions in; plans, metrics, timelines, reports,
// frontier points and trace summaries out. Everything that enters from
// outside is validated here, once; every violation names its field path
// ("hardware.d2h_bytes_per_second") through FieldViolations
// (field_violations.h).
#ifndef SLACKSWAP_SERVICE_WIRE_CONVERT_H_
#define SLACKSWAP_SERVICE_WIRE_CONVERT_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "planner/allocator_budget.h"
#include "planner/frontier.h"
#include "planner/planner_options.h"
#include "planner/planning_result.h"
#include "planner/policies.h"
#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/plan.h"
#include "simulator/schedule.h"
#include "simulator/trace.h"
#include "simulator/workload.h"
#include "slackswap/v1/hardware.pb.h"
#include "slackswap/v1/plan.pb.h"
#include "slackswap/v1/planning.pb.h"
#include "slackswap/v1/service.pb.h"
#include "slackswap/v1/simulation.pb.h"

namespace slackswap {

// Validates and converts a hardware descriptor. Field paths start with
// "hardware".
absl::StatusOr<Hardware> HardwareFromProto(const v1::Hardware& proto);
v1::Hardware HardwareToProto(const Hardware& hardware);

// The budget in bytes for `trace`: bytes as given, floor(fraction * peak of
// the all-keep run), or kUnlimitedBytes. Field paths start with "budget".
absl::StatusOr<int64_t> ResolveBudget(const Trace& trace,
                                      const v1::Budget& budget);

// Reads decisions and issue points (the schedule fields are ignored: they are
// derived). Checks the count and the enum values; ValidatePlan checks the
// rest. Field paths start with "plan".
absl::StatusOr<Plan> PlanFromProto(const Trace& trace, const v1::Plan& proto);
// The plan with its derived schedule filled in.
v1::Plan PlanToProto(const Plan& plan, const Schedule& schedule);

v1::Metrics MetricsToProto(const SimulationResult& result);
v1::Timeline TimelineToProto(const SimulationResult& result);

// Validates and converts options; field paths start with "options".
absl::StatusOr<PlannerOptions> PlannerOptionsFromProto(
    const v1::PlannerOptions& proto);

// Validates and converts the physics (the node's switches and the
// allocator: simulator/physics.h). Field paths start with "physics".
absl::StatusOr<Physics> PhysicsFromProto(const v1::Physics& proto);
v1::AllocatorModel AllocatorToProto(AllocatorKind kind);

// The report for a planning result (plan with its schedule, replay metrics,
// lower bound, statistics).
v1::PlanningReport PlanningReportToProto(const Trace& trace,
                                         const PlanningResult& result);

v1::Policy PolicyToProto(Policy policy);
// INVALID_ARGUMENT naming `field` for POLICY_UNSPECIFIED or unknown values.
absl::StatusOr<Policy> PolicyFromProto(v1::Policy policy,
                                       absl::string_view field);

// A frontier point, its budget also as a fraction of `all_keep_peak_bytes`;
// one without a plan is INFEASIBLE below `proven_floor_bytes`, NO_PLAN_FOUND
// at or above it.
v1::FrontierPoint FrontierPointToProto(const FrontierPoint& point,
                                       int64_t all_keep_peak_bytes,
                                       int64_t proven_floor_bytes);

v1::PlanOutcome PlanOutcomeToProto(PlanOutcome outcome);

v1::TraceSummary TraceSummaryToProto(const TraceSummary& summary);

// The generator's precision on the wire and back; PRECISION_UNSPECIFIED (the
// preset's) and unknown values give nullopt.
v1::Precision PrecisionToProto(Precision precision);
std::optional<Precision> PrecisionFromProto(int precision);

// The generator's offload mode on the wire and back; OFFLOAD_UNSPECIFIED
// gives Offload::kNone, unknown values nullopt.
v1::Offload OffloadToProto(Offload offload);
std::optional<Offload> OffloadFromProto(int offload);

}  // namespace slackswap

#endif  // SLACKSWAP_SERVICE_WIRE_CONVERT_H_
