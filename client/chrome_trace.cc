#include "client/chrome_trace.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "base/json.h"

namespace slackswap {
namespace {

std::string Micros(int64_t ns) {
  return absl::StrCat(ns / 1000, ".", absl::Dec(ns % 1000, absl::kZeroPad3));
}

}  // namespace

std::string ChromeTraceJson(const v1::Trace& trace,
                            const v1::Timeline& timeline,
                            int64_t iteration_ns) {
  auto op_name = [&](int32_t i) {
    return i >= 0 && i < trace.operators_size() ? trace.operators(i).name()
                                                : absl::StrCat("op ", i);
  };
  auto tensor_name = [&](int32_t i) {
    return i >= 0 && i < trace.tensors_size() ? trace.tensors(i).name()
                                              : absl::StrCat("tensor ", i);
  };
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  absl::StrAppend(
      &out,
      R"({"ph":"M","pid":1,"name":"process_name","args":{"name":"slackswap"}},)",
      "\n");
  const char* threads[] = {"compute", "D2H (offload)", "H2D (prefetch)"};
  for (int tid = 0; tid < 3; ++tid) {
    absl::StrAppend(&out, R"({"ph":"M","pid":1,"tid":)", tid + 1,
                    R"(,"name":"thread_name","args":{"name":")", threads[tid],
                    "\"}},\n");
  }
  for (const v1::TimelineEvent& e : timeline.events()) {
    std::string name;
    int tid = 1;
    switch (e.kind()) {
      case v1::TIMELINE_EVENT_KIND_OP:
        name = op_name(e.index());
        break;
      case v1::TIMELINE_EVENT_KIND_REBUILD:
        name = "rebuild " + tensor_name(e.index());
        break;
      case v1::TIMELINE_EVENT_KIND_OFFLOAD:
        name = "offload " + tensor_name(e.index());
        tid = 2;
        break;
      case v1::TIMELINE_EVENT_KIND_PREFETCH:
        name = "prefetch " + tensor_name(e.index());
        tid = 3;
        break;
      default:
        continue;
    }
    absl::StrAppend(&out, R"({"ph":"X","pid":1,"tid":)", tid,
                    ",\"name\":", JsonQuote(name),
                    ",\"ts\":", Micros(e.start_ns()),
                    ",\"dur\":", Micros(e.end_ns() - e.start_ns()),
                    R"(,"args":{"index":)", e.index(), "}},\n");
    absl::StrAppend(&out, R"({"ph":"C","pid":1,"name":"resident_bytes","ts":)",
                    Micros(e.start_ns()), R"(,"args":{"bytes":)",
                    e.resident_bytes(), "}},\n");
  }
  absl::StrAppend(
      &out, R"({"ph":"i","pid":1,"tid":1,"s":"g","name":"iteration end","ts":)",
      Micros(iteration_ns), "}\n]}\n");
  return out;
}

}  // namespace slackswap
