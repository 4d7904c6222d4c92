// File: process_metrics.h
//
// The standard process_* metrics of Prometheus client libraries, read from
// /proc/self when the endpoint is scraped (Linux):
//   process_cpu_seconds_total       user and system CPU time
//   process_resident_memory_bytes   resident set size
//   process_virtual_memory_bytes    virtual memory size
//   process_open_fds                open file descriptors
//   process_max_fds                 the descriptor limit (RLIMIT_NOFILE)
//   process_start_time_seconds      start time, seconds since the epoch
// prometheus-cpp has no such collector; dashboards and alerts (memory
// against the container's limit, descriptor exhaustion) expect these names.
#ifndef SLACKSWAP_SERVER_PROCESS_METRICS_H_
#define SLACKSWAP_SERVER_PROCESS_METRICS_H_

#include <optional>
#include <string>

#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace slackswap {

// One reading of /proc/self.
struct ProcessSample {
  double cpu_seconds = 0;
  double resident_bytes = 0;
  double virtual_bytes = 0;
  double open_fds = 0;
  double max_fds = 0;
  double start_time_seconds = 0;
};

// Parses /proc/self/stat's text (`stat`) with the system's clock ticks per
// second, page size and boot time (seconds since the epoch); nullopt when it
// is not in that form. Exposed for tests.
std::optional<ProcessSample> ParseProcStat(const std::string& stat,
                                           double ticks_per_second,
                                           double page_bytes,
                                           double boot_time_seconds);

class ProcessMetrics {
 public:
  // Registers the families in `registry`, which must outlive this.
  explicit ProcessMetrics(prometheus::Registry& registry);
  // Reads /proc/self and sets every series; keeps the last values when a
  // read fails.
  void Update();

 private:
  // A counter, advanced by what each reading adds.
  prometheus::Counter* cpu_ = nullptr;
  double cpu_seen_ = 0;
  prometheus::Gauge* resident_ = nullptr;
  prometheus::Gauge* virtual_ = nullptr;
  prometheus::Gauge* open_fds_ = nullptr;
  prometheus::Gauge* max_fds_ = nullptr;
  prometheus::Gauge* start_time_ = nullptr;
  double boot_time_seconds_ = 0;
};

}  // namespace slackswap

#endif  // SLACKSWAP_SERVER_PROCESS_METRICS_H_
