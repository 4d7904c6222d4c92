#include "server/planner_service.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/field_violations.h"
#include "base/status_macros.h"
#include "base/stop.h"
#include "base/usable_cpus.h"
#include "google/protobuf/arena.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "grpcpp/support/proto_buffer_writer.h"
#include "service/grpc_status.h"
#include "service/trace_convert.h"
#include "service/trace_wire.h"
#include "service/wire_convert.h"
#include "service/wire_counts.h"

namespace slackswap {
namespace {

// Each planning thread parses requests into the same first arena block, so
// that a typical trace costs no allocation from the system at all; larger
// ones continue in blocks from malloc.
google::protobuf::ArenaOptions RequestArenaOptions() {
  constexpr size_t kFirstBlockBytes = 1 << 20;
  thread_local std::unique_ptr<char[]> first_block(new char[kFirstBlockBytes]);
  google::protobuf::ArenaOptions options;
  options.initial_block = first_block.get();
  options.initial_block_size = kFirstBlockBytes;
  options.start_block_size = 256 << 10;
  options.max_block_size = 4 << 20;
  return options;
}

// Requests with a `trace` field: their trace is decoded from the request
// bytes (TraceFromWire) rather than parsed into the message.
template <typename Request, typename = void>
struct CarriesTrace : std::false_type {};
template <typename Request>
struct CarriesTrace<Request, std::void_t<decltype(Request::kTraceFieldNumber)>>
    : std::true_type {};

// Buffers a planning thread keeps for its requests; one that held an unusually
// large request is given back rather than kept.
void Release(std::string& buffer) {
  constexpr size_t kKeptBytes = 4 << 20;
  if (buffer.capacity() > kKeptBytes) std::string().swap(buffer);
}

// A request parsed for its call: the message, and the traces decoded from
// its bytes rather than parsed into it.
template <typename Request>
struct ParsedRequest {
  Request* message = nullptr;  // null: not a valid message
  // Requests with a `trace`: the decoded trace (or its validation error),
  // when the bytes were in the form the wire decoder takes; the message
  // then lacks the trace.
  std::optional<absl::StatusOr<Trace>> trace;
  // PlanNodeRequest: every job's trace, in order, when all were decoded
  // (the jobs in the message then lack them).
  std::optional<std::vector<Trace>> job_traces;
};

// The request's bytes in one piece (in a buffer the planning thread keeps).
absl::string_view Flatten(const grpc::ByteBuffer& bytes, std::string& flat) {
  flat.clear();
  std::vector<grpc::Slice> slices;
  if (!bytes.Dump(&slices).ok()) return absl::string_view();
  flat.reserve(bytes.Length());  // once: no copy per doubling
  for (const grpc::Slice& slice : slices) {
    flat.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return flat;
}

// A trace's bytes decoded, by the wire decoder or, for other encodings, by
// protobuf; validation errors name `field`.
absl::StatusOr<Trace> DecodeTrace(absl::string_view bytes,
                                  absl::string_view field) {
  std::optional<absl::StatusOr<Trace>> trace = TraceFromWire(bytes);
  if (!trace.has_value()) {
    v1::Trace message;
    if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
      return InvalidField(field, "not a valid slackswap.v1.Trace");
    trace = TraceFromProto(message);
  }
  if (!trace->ok()) return RenameField(trace->status(), "trace", field);
  return *std::move(trace);
}

// Each job's trace decoded, and the request parsed into `message` with its
// jobs but without their traces. False: the bytes are not in the form this
// takes (parse the whole message instead). A trace that does not validate
// sets `error` (naming jobs[i].trace).
bool ParseNodeJobs(absl::string_view flat, v1::PlanNodeRequest& message,
                   std::vector<Trace>& traces, absl::Status& error) {
  std::string others;
  std::vector<absl::string_view> jobs;
  if (!ForEachLengthDelimited(
          flat, v1::PlanNodeRequest::kJobsFieldNumber,
          [&](absl::string_view job) { jobs.push_back(job); }) ||
      !CopyWithoutField(flat, v1::PlanNodeRequest::kJobsFieldNumber, others) ||
      !message.ParseFromString(others)) {
    return false;
  }
  std::string job_rest;
  for (size_t i = 0; i < jobs.size(); ++i) {
    absl::string_view trace_bytes;
    if (!SplitField(jobs[i], v1::NodeJob::kTraceFieldNumber, trace_bytes,
                    job_rest) ||
        !message.add_jobs()->ParseFromString(job_rest)) {
      return false;
    }
    // A node's traces are decoded one after another: stop between them
    // when the call's stop says so (Serve sets it around the parse).
    if (StopRequested()) {
      error = absl::CancelledError("the call was cancelled or timed out");
      return true;
    }
    absl::StatusOr<Trace> trace =
        DecodeTrace(trace_bytes, absl::StrCat("jobs[", i, "].trace"));
    if (!trace.ok()) {
      error = trace.status();
      return true;
    }
    traces.push_back(*std::move(trace));
  }
  return true;
}

// Parses `bytes` into a message on `arena`, after checking its counts and
// traces' sizes from the bytes (ServiceCore::CheckRequestBytes). For a
// request with a trace in the form protobuf serializers write, the trace is
// decoded (TraceFromWire) and the message parsed without it; a node's jobs'
// traces likewise.
template <typename Request>
absl::StatusOr<ParsedRequest<Request>> ParseRequest(
    const grpc::ByteBuffer& bytes, google::protobuf::Arena& arena,
    const ServiceCore& core) {
  ParsedRequest<Request> parsed;
  parsed.message = google::protobuf::Arena::CreateMessage<Request>(&arena);
  thread_local std::string flat_buffer;
  thread_local std::string rest;
  const absl::string_view flat = Flatten(bytes, flat_buffer);
  absl::Status checked =
      core.CheckRequestBytes(static_cast<const Request*>(nullptr), flat);
  if (checked.ok()) {
    if constexpr (CarriesTrace<Request>::value) {
      absl::string_view trace_bytes;
      if (SplitField(flat, Request::kTraceFieldNumber, trace_bytes, rest) &&
          parsed.message->ParseFromString(rest)) {
        parsed.trace = TraceFromWire(trace_bytes);
        if (!parsed.trace.has_value()) parsed.message->Clear();
      }
    }
    if constexpr (std::is_same_v<Request, v1::PlanNodeRequest>) {
      std::vector<Trace> traces;
      absl::Status error;
      if (ParseNodeJobs(flat, *parsed.message, traces, error)) {
        if (!error.ok()) checked = error;
        parsed.job_traces = std::move(traces);
      } else {
        parsed.message->Clear();
      }
    }
  }
  Release(flat_buffer);
  Release(rest);
  SLACKSWAP_RETURN_IF_ERROR(checked);
  if (parsed.trace.has_value() || parsed.job_traces.has_value()) return parsed;
  grpc::ByteBuffer shared(bytes);  // shares the slices
  if (!grpc::GenericDeserialize<grpc::ProtoBufferReader, Request>(
           &shared, parsed.message)
           .ok()) {
    parsed.message = nullptr;
  }
  return parsed;
}

}  // namespace

PlannerServiceImpl::PlannerServiceImpl(
    int max_concurrent_calls, int planning_threads, ServerMetrics* metrics,
    CallLimits limits, absl::Duration max_call_duration,
    int64_t max_message_bytes, CallLog* call_log, int64_t compress_from_bytes)
    : max_concurrent_calls_(max_concurrent_calls),
      max_call_duration_(max_call_duration),
      max_message_bytes_(max_message_bytes),
      compress_from_bytes_(compress_from_bytes),
      metrics_(metrics),
      call_log_(call_log),
      core_(metrics, limits) {
  const int threads = planning_threads > 0 ? planning_threads : UsableCpus();
  workers_.reserve(threads);
  for (int i = 0; i < threads; ++i)
    workers_.emplace_back([this] { RunWorker(); });
}

PlannerServiceImpl::~PlannerServiceImpl() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void PlannerServiceImpl::Submit(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void PlannerServiceImpl::RunWorker() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left to run
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

// How long a refused caller should wait: about what one call takes to plan
// on a busy replica, so that the retry lands after a slot frees.
constexpr absl::Duration kBusyPushback = absl::Milliseconds(250);

void PlannerServiceImpl::Finish(grpc::CallbackServerContext* context,
                                grpc::ServerUnaryReactor* reactor,
                                const grpc::Status& status,
                                CallRecord& record) {
  record.code = status.error_code();
  if (!status.ok()) record.error = status.error_message();
  if (call_log_ != nullptr) call_log_->Write(record);
  if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
    const std::optional<absl::Duration> delay = RetryDelayOf(status);
    context->AddTrailingMetadata(
        "grpc-retry-pushback-ms",
        delay.has_value() ? absl::StrCat(absl::ToInt64Milliseconds(*delay))
                          : "-1");
  }
  reactor->Finish(status);
}

grpc::ServerUnaryReactor* PlannerServiceImpl::Refuse(
    grpc::CallbackServerContext* context, grpc::ServerUnaryReactor* reactor,
    const grpc::Status& status, CallRecord& record) {
  if (metrics_ != nullptr) {
    metrics_->CallRejected(record.method, status.error_code(), record.duration);
  }
  Finish(context, reactor, status, record);
  return reactor;
}

grpc::ServerUnaryReactor* PlannerServiceImpl::Handle(
    Method method, grpc::CallbackServerContext* context, int64_t request_bytes,
    std::function<absl::Status(const StopFunction&, CallRecord&)> work) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const absl::Time start = absl::Now();
  CallRecord record;
  record.method = method;
  record.request_bytes = request_bytes;
  if (call_log_ != nullptr) ReadCallMetadata(*context, record);
  if (metrics_ != nullptr) metrics_->CallReceived(method, request_bytes);
  last_arrival_ns_.store(absl::ToUnixNanos(start));
  if (draining_.load()) {
    record.duration = absl::Now() - start;
    return Refuse(context, reactor,
                  grpc::Status(grpc::StatusCode::UNAVAILABLE,
                               "server draining; retry on another replica"),
                  record);
  }
  if (max_message_bytes_ > 0 && request_bytes > max_message_bytes_) {
    record.duration = absl::Now() - start;
    return Refuse(context, reactor,
                  grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                               absl::StrCat("request: ", request_bytes,
                                            " bytes, over the server's limit "
                                            "of ",
                                            max_message_bytes_,
                                            " (--max_message_bytes)")),
                  record);
  }
  if (inflight_.fetch_add(1) >= max_concurrent_calls_) {
    inflight_.fetch_sub(1);
    record.duration = absl::Now() - start;
    return Refuse(
        context, reactor,
        RetryLater(absl::StrCat("server busy: ", max_concurrent_calls_,
                                " calls in flight; retry later or on "
                                "another replica"),
                   kBusyPushback),
        record);
  }
  if (metrics_ != nullptr) metrics_->CallStarted();
  Submit([this, method, context, reactor, start, record = std::move(record),
          work = std::move(work)]() mutable {
    record.queue_wait = absl::Now() - start;
    if (metrics_ != nullptr) metrics_->CallDequeued(method, record.queue_wait);
    // The client's deadline, or the server's own bound if that comes first.
    auto deadline = context->deadline();
    if (max_call_duration_ > absl::ZeroDuration()) {
      deadline =
          std::min(deadline, absl::ToChronoTime(start + max_call_duration_));
    }
    auto deadline_passed = [deadline] {
      return std::chrono::system_clock::now() > deadline;
    };
    const StopFunction should_stop = [context, deadline_passed] {
      return context->IsCancelled() || deadline_passed();
    };
    absl::Status status = should_stop()
                              ? absl::CancelledError("the call was cancelled")
                              : work(should_stop, record);
    if (absl::IsCancelled(status) && deadline_passed()) {
      status = absl::DeadlineExceededError(
          "the deadline passed before the work was done");
    }
    grpc::Status result = ToGrpcStatus(status);
    inflight_.fetch_sub(1);
    record.duration = absl::Now() - start;
    if (metrics_ != nullptr)
      metrics_->CallFinished(method, result.error_code(), record.duration);
    Finish(context, reactor, result, record);
  });
  return reactor;
}

template <Method M>
grpc::ServerUnaryReactor* PlannerServiceImpl::Serve(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  using Request = typename Rpc<M>::Request;
  constexpr Method method = M;
  return Handle(
      method, context, static_cast<int64_t>(request->Length()),
      [this, context, request, response](const StopFunction& stop,
                                         CallRecord& record) {
        google::protobuf::Arena arena(RequestArenaOptions());
        absl::StatusOr<ParsedRequest<Request>> parsed = [&] {
          ScopedStop scope(&stop);
          return ParseRequest<Request>(*request, arena, core_);
        }();
        if (!parsed.ok()) return parsed.status();
        const Request* message = parsed->message;
        const std::optional<absl::StatusOr<Trace>>& trace = parsed->trace;
        if (message == nullptr) {
          return absl::InvalidArgumentError(
              absl::StrCat("request: not a valid ",
                           Request::descriptor()->full_name(), " message"));
        }
        if constexpr (CarriesTrace<Request>::value) {
          if (trace.has_value() && trace->ok()) {
            record.trace_operators = (*trace)->num_ops();
            record.trace_tensors = (*trace)->num_tensors();
          } else if (!trace.has_value()) {
            record.trace_operators = message->trace().operators_size();
            record.trace_tensors = message->trace().tensors_size();
          }
        }
        if (trace.has_value() && !trace->ok()) return trace->status();
        // The traces decoded from the bytes, else the message's own.
        absl::StatusOr<typename Rpc<M>::Response> result =
            trace.has_value() || parsed->job_traces.has_value()
                ? Rpc<M>::Run(
                      core_,
                      Decoded<Request>{
                          *message, trace.has_value() ? &**trace : nullptr,
                          parsed->job_traces.has_value() ? &*parsed->job_traces
                                                         : nullptr},
                      stop)
                : Rpc<M>::Run(core_, *message, stop);
        if (!result.ok()) return result.status();
        bool own_buffer = false;
        const grpc::Status written =
            grpc::GenericSerialize<grpc::ProtoBufferWriter,
                                   typename decltype(result)::value_type>(
                *result, response, &own_buffer);
        if (!written.ok()) {
          return absl::InternalError("the response could not be serialized");
        }
        const int64_t response_bytes = static_cast<int64_t>(response->Length());
        if (max_message_bytes_ > 0 && response_bytes > max_message_bytes_) {
          response->Clear();
          return absl::ResourceExhaustedError(absl::StrCat(
              "response: ", response_bytes,
              " bytes, over the server's limit of ", max_message_bytes_,
              " (--max_message_bytes); ask for less (fewer budgets or "
              "policies, no timeline) or raise the limit"));
        }
        record.response_bytes = response_bytes;
        if (compress_from_bytes_ > 0 && response_bytes >= compress_from_bytes_)
          // A level, not an algorithm: gRPC picks one the client accepts
          // (its grpc-accept-encoding), or none.
          context->set_compression_level(GRPC_COMPRESS_LEVEL_HIGH);
        if (metrics_ != nullptr) metrics_->ResponseSent(method, response_bytes);
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::Plan(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return Serve<Method::kPlan>(context, request, response);
}

grpc::ServerUnaryReactor* PlannerServiceImpl::Simulate(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return Serve<Method::kSimulate>(context, request, response);
}

grpc::ServerUnaryReactor* PlannerServiceImpl::Compare(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return Serve<Method::kCompare>(context, request, response);
}

grpc::ServerUnaryReactor* PlannerServiceImpl::Frontier(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return Serve<Method::kFrontier>(context, request, response);
}

grpc::ServerUnaryReactor* PlannerServiceImpl::PlanNode(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return Serve<Method::kPlanNode>(context, request, response);
}

grpc::ServerUnaryReactor* PlannerServiceImpl::GenerateTrace(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return Serve<Method::kGenerateTrace>(context, request, response);
}

}  // namespace slackswap
