#include "simulator/node_model.h"

#include <algorithm>
#include <utility>

#include "base/stop.h"

namespace slackswap {
namespace internal {
namespace {

// Each moving transfer's rate in one direction: its link, or its even share
// of the uplink (rounded down to a byte per second), whichever is less.
int64_t Share(int64_t link, int64_t uplink, int64_t moving) {
  if (uplink <= 0 || moving <= 0) return link;
  return std::min(link, std::max<int64_t>(uplink / moving, 1));
}

}  // namespace

void RunShared(
    std::vector<Member>& members, const Hardware& node,
    absl::FunctionRef<void(size_t, int64_t, SimulationResult)> finished) {
  int64_t now = 0;
  // Members whose state changed at `now` (an event of theirs, or a start):
  // only they can start something.
  std::vector<uint8_t> touched(members.size(), 1);
  std::vector<int64_t> next_of(members.size(), kNever);
  for (int events = kReplayStopPollEvents;; ++events) {
    if (events == kReplayStopPollEvents) {
      events = 0;
      if (StopRequested()) {
        // Every member ends here, stopped (a stopped result is never run
        // again: it is infeasible).
        for (size_t i = 0; i < members.size(); ++i) {
          Member& m = members[i];
          if (m.finished) continue;
          m.replay->ReportStopped();
          m.finished = true;
          finished(i, now, m.replay->Finish());
        }
        return;
      }
    }
    int64_t d2h_moving = 0, h2d_moving = 0;
    for (size_t i = 0; i < members.size(); ++i) {
      Member& m = members[i];
      if (m.finished || m.origin > now) continue;
      // (A member restarted at `now` starts at once.)
      while (touched[i] && !m.finished && m.origin <= now) {
        m.replay->TryStart();
        if (!m.replay->done()) break;
        m.finished = true;
        finished(i, now, m.replay->Finish());
      }
      touched[i] = 0;
      if (m.finished || m.origin > now) continue;
      d2h_moving += m.replay->d2h_moving() ? m.multiplicity : 0;
      h2d_moving += m.replay->h2d_moving() ? m.multiplicity : 0;
    }
    // The rates until the next event.
    int64_t next = kNever;
    size_t unfinished = 0;
    for (size_t i = 0; i < members.size(); ++i) {
      Member& m = members[i];
      next_of[i] = kNever;
      if (m.finished) continue;
      if (m.origin > now) {
        ++unfinished;
        next_of[i] = m.origin;
        next = std::min(next, m.origin);
        continue;
      }
      m.replay->SetRates(Share(m.hardware->d2h_bytes_per_second,
                               node.uplink_d2h_bytes_per_second, d2h_moving),
                         Share(m.hardware->h2d_bytes_per_second,
                               node.uplink_h2d_bytes_per_second, h2d_moving));
      const int64_t local = m.replay->NextEvent();
      if (local == kNever) {
        // Nothing of its own runs: no other GPU can release it.
        m.replay->ReportInfeasible();
        finished(i, now, m.replay->Finish());
        m.finished = true;  // never run again
        continue;
      }
      ++unfinished;
      next_of[i] = m.origin + local;
      next = std::min(next, next_of[i]);
    }
    if (unfinished == 0 || next == kNever) return;
    const int64_t before = now;
    now = next;
    for (size_t i = 0; i < members.size(); ++i) {
      Member& m = members[i];
      if (m.finished || m.origin > now) continue;
      if (m.origin > before) {  // it starts now
        touched[i] = 1;
        continue;
      }
      m.replay->AdvanceTo(now - m.origin);
      if (next_of[i] == now) {
        m.replay->FinishDue();
        touched[i] = 1;
      }
    }
  }
}

SimulationResult SimulateRanks(const Trace& trace, const Hardware& hardware,
                               const Plan& plan, const Schedule& schedule,
                               const SimulationOptions& options) {
  // Ranks that start together stay identical: one replay stands for all,
  // each copy at its direction's even share of the uplink.
  if (options.physics.rank_skew_ns == 0) {
    return Replay(trace, hardware, plan, schedule, options, Rates::kLockstep)
        .Run();
  }
  if (StopRequested()) {  // before building a replay per rank
    Replay stopped(trace, hardware, plan, schedule, options, Rates::kShared);
    stopped.ReportStopped();
    return stopped.Finish();
  }
  std::vector<Member> members;
  for (int32_t r = 0; r < std::max(hardware.gpus_per_uplink, 1); ++r) {
    Member m;
    m.replay = std::make_unique<Replay>(trace, hardware, plan, schedule,
                                        options, Rates::kShared);
    m.hardware = &hardware;
    m.origin = options.physics.rank_skew_ns * r;
    members.push_back(std::move(m));
  }
  std::vector<SimulationResult> results(members.size());
  RunShared(members, hardware, [&](size_t i, int64_t, SimulationResult r) {
    results[i] = std::move(r);
  });
  // The job's step is its slowest rank's (or an infeasible one's).
  size_t pick = 0;
  for (size_t i = 1; i < results.size(); ++i) {
    const SimulationResult& a = results[i];
    const SimulationResult& b = results[pick];
    if (a.feasible != b.feasible
            ? !a.feasible
            : a.feasible && a.iteration_ns > b.iteration_ns) {
      pick = i;
    }
  }
  int64_t events = 0;
  for (const SimulationResult& r : results) events += r.events;
  SimulationResult result = std::move(results[pick]);
  result.rank = static_cast<int32_t>(pick);
  result.events = events;
  return result;
}

}  // namespace internal

std::vector<NodeJobSteps> SimulateNode(const std::vector<NodeJob>& jobs,
                                       const Hardware& node, int steps) {
  using internal::Member;
  using internal::Rates;
  using internal::Replay;
  std::vector<NodeJobSteps> out(jobs.size());
  std::vector<Member> members;
  auto fresh = [&](size_t j) {
    return std::make_unique<Replay>(*jobs[j].trace, node, *jobs[j].plan,
                                    *jobs[j].schedule, jobs[j].options,
                                    Rates::kShared);
  };
  for (size_t j = 0; j < jobs.size(); ++j) {
    Member m;
    m.replay = fresh(j);
    m.hardware = &node;
    m.multiplicity = std::max(jobs[j].gpus, 1);
    members.push_back(std::move(m));
  }
  auto counted = [&](size_t j) {
    return !out[j].feasible || static_cast<int>(out[j].step_ns.size()) >= steps;
  };
  // Steps each job has run, counted or not. A job past its count keeps
  // running beside the others, up to kMaxStepsPerCounted times its count,
  // and never with steps that take no time (it would not let time pass).
  std::vector<int64_t> runs(jobs.size(), 0);
  const int64_t most = int64_t{kMaxStepsPerCounted} * std::max(steps, 1);
  internal::RunShared(members, node,
                      [&](size_t j, int64_t now, SimulationResult r) {
                        NodeJobSteps& job = out[j];
                        const bool feasible = r.feasible;
                        const int64_t took = r.iteration_ns;
                        ++runs[j];
                        if (!counted(j)) {
                          job.feasible = feasible;
                          if (feasible) job.step_ns.push_back(took);
                          job.last = std::move(r);
                        }
                        bool all = true;
                        for (size_t k = 0; k < jobs.size(); ++k)
                          all &= counted(k);
                        if (all || !feasible) return;
                        if (counted(j) && (took == 0 || runs[j] >= most))
                          return;
                        members[j].replay = fresh(j);
                        members[j].origin = now;
                        members[j].finished = false;
                      });
  for (NodeJobSteps& job : out) {
    const size_t n = job.step_ns.size();
    if (n == 0) continue;
    int64_t sum = 0;
    for (size_t i = n > 1 ? 1 : 0; i < n; ++i) sum += job.step_ns[i];
    job.mean_step_ns = sum / static_cast<int64_t>(n > 1 ? n - 1 : 1);
  }
  return out;
}

}  // namespace slackswap
