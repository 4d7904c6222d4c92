#include "client/chrome_trace.h"

#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/json.h"

namespace slackswap {
namespace {

std::string Micros(int64_t ns) {
  return absl::StrCat(ns / 1000, ".", absl::Dec(ns % 1000, absl::kZeroPad3));
}

// "memory", "prefetch", "barrier", "fixed_transfer".
std::string CauseName(v1::WaitCause cause) {
  std::string name = v1::WaitCause_Name(cause);
  return absl::AsciiStrToLower(name.substr(std::string("WAIT_CAUSE_").size()));
}

}  // namespace

int64_t ChromeTraceProcessId(const std::string& process_name) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : process_name) {
    hash ^= c;
    hash *= 16777619u;
  }
  return 1 + hash % ((uint32_t{1} << 31) - 1);
}

std::string ChromeTraceJson(const v1::Trace& trace,
                            const v1::Timeline& timeline,
                            const v1::Metrics& metrics,
                            const std::string& process_name) {
  const std::string pid = absl::StrCat(ChromeTraceProcessId(process_name));
  auto op_name = [&](int32_t i) {
    return i >= 0 && i < trace.operators_size() ? trace.operators(i).name()
                                                : absl::StrCat("op ", i);
  };
  auto tensor_name = [&](int32_t i) {
    return i >= 0 && i < trace.tensors_size() ? trace.tensors(i).name()
                                              : absl::StrCat("tensor ", i);
  };
  auto tensor_bytes = [&](int32_t i) -> int64_t {
    return i >= 0 && i < trace.tensors_size() ? trace.tensors(i).size_bytes()
                                              : 0;
  };
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  absl::StrAppend(&out, R"({"ph":"M","pid":)", pid,
                  R"(,"name":"process_name","args":{"name":)",
                  JsonQuote(process_name), "}},\n");
  const char* threads[] = {"compute", "D2H (offload)", "H2D (prefetch)"};
  for (int tid = 0; tid < 3; ++tid) {
    absl::StrAppend(&out, R"({"ph":"M","pid":)", pid, R"(,"tid":)", tid + 1,
                    R"(,"name":"thread_name","args":{"name":")", threads[tid],
                    "\"}},\n");
  }
  // The budget, as a line beside the resident bytes (none when unlimited).
  const bool budgeted =
      metrics.budget_bytes() > 0 &&
      metrics.budget_bytes() < std::numeric_limits<int64_t>::max();
  if (budgeted) {
    absl::StrAppend(&out, R"({"ph":"C","pid":)", pid,
                    R"(,"name":"budget_bytes","ts":0.000,"args":{"bytes":)",
                    metrics.budget_bytes(), "}},\n");
  }
  for (const v1::TimelineEvent& e : timeline.events()) {
    std::string name, category, args;
    int tid = 1;
    switch (e.kind()) {
      case v1::TIMELINE_EVENT_KIND_OP: {
        name = op_name(e.index());
        category = "op";
        args = absl::StrCat(R"("index":)", e.index());
        if (e.index() >= 0 && e.index() < trace.operators_size()) {
          const v1::Operator& op = trace.operators(e.index());
          absl::StrAppend(&args, R"(,"kind":")", v1::OpKind_Name(op.kind()),
                          R"(","phase":")", v1::Phase_Name(op.phase()), "\"");
        }
        break;
      }
      case v1::TIMELINE_EVENT_KIND_REBUILD:
        name = "rebuild " + tensor_name(e.index());
        category = "rebuild";
        break;
      case v1::TIMELINE_EVENT_KIND_OFFLOAD:
        name = "offload " + tensor_name(e.index());
        category = "offload";
        tid = 2;
        break;
      case v1::TIMELINE_EVENT_KIND_PREFETCH:
        name = "prefetch " + tensor_name(e.index());
        category = "prefetch";
        tid = 3;
        break;
      case v1::TIMELINE_EVENT_KIND_FIXED_TRANSFER: {
        // The job's own traffic, on its direction's track.
        const bool known =
            e.index() >= 0 && e.index() < trace.fixed_transfers_size();
        const v1::FixedTransfer x =
            known ? trace.fixed_transfers(e.index()) : v1::FixedTransfer();
        name = "fixed " +
               (known ? x.name() : absl::StrCat("transfer ", e.index()));
        category = "fixed";
        tid = x.direction() == v1::DIRECTION_H2D ? 3 : 2;
        args = absl::StrCat(R"("index":)", e.index(), R"(,"bytes":)",
                            x.size_bytes(), R"(,"gpu_bytes":)", x.gpu_bytes());
        break;
      }
      case v1::TIMELINE_EVENT_KIND_STALL:
        name = "stall: " + CauseName(e.wait_cause());
        category = "stall";
        args = absl::StrCat(R"("op":)", e.index(), R"(,"op_name":)",
                            JsonQuote(op_name(e.index())), R"(,"cause":")",
                            CauseName(e.wait_cause()), "\"");
        break;
      default:
        continue;
    }
    if (args.empty()) {
      args = absl::StrCat(R"("index":)", e.index(), R"(,"bytes":)",
                          tensor_bytes(e.index()));
    }
    absl::StrAppend(
        &out, R"({"ph":"X","pid":)", pid, R"(,"tid":)", tid, R"(,"cat":")",
        category, "\",\"name\":", JsonQuote(name),
        ",\"ts\":", Micros(e.start_ns()),
        ",\"dur\":", Micros(e.end_ns() - e.start_ns()), R"(,"args":{)", args,
        R"(,"resident_bytes":)", e.resident_bytes(),
        e.slowed_ns() > 0 ? absl::StrCat(R"(,"slowed_ns":)", e.slowed_ns())
                          : "",
        "}},\n");
    absl::StrAppend(&out, R"({"ph":"C","pid":)", pid,
                    R"(,"name":"resident_bytes","ts":)", Micros(e.start_ns()),
                    R"(,"args":{"bytes":)", e.resident_bytes(), "}},\n");
  }
  if (budgeted) {
    absl::StrAppend(&out, R"({"ph":"C","pid":)", pid,
                    R"(,"name":"budget_bytes","ts":)",
                    Micros(metrics.iteration_ns()), R"(,"args":{"bytes":)",
                    metrics.budget_bytes(), "}},\n");
  }
  absl::StrAppend(&out, R"({"ph":"i","pid":)", pid,
                  R"(,"tid":1,"s":"g","name":"iteration end","ts":)",
                  Micros(metrics.iteration_ns()), "}\n]}\n");
  return out;
}

}  // namespace slackswap
