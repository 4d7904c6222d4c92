// File: planner_proto.h
//
// Wire conversions for the planner: options in, report out.
#ifndef SLACKSWAP_PLANNER_PLANNER_PROTO_H_
#define SLACKSWAP_PLANNER_PLANNER_PROTO_H_

#include "absl/status/statusor.h"
#include "planner/planner_options.h"
#include "planner/policies.h"
#include "planner/slackswap.h"
#include "slackswap/v1/planning.pb.h"

namespace slackswap {

// Validates and converts options; field paths start with "options".
absl::StatusOr<PlannerOptions> PlannerOptionsFromProto(
    const v1::PlannerOptions& proto);

// The report for a planning result (plan with its schedule, replay metrics,
// lower bound, statistics).
v1::PlanningReport PlanningReportToProto(const Trace& trace,
                                         const PlanningResult& result);

v1::Policy PolicyToProto(Policy policy);
// INVALID_ARGUMENT naming `field` for POLICY_UNSPECIFIED or unknown values.
absl::StatusOr<Policy> PolicyFromProto(v1::Policy policy,
                                       absl::string_view field);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_PLANNER_PROTO_H_
