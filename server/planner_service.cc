#include "server/planner_service.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "google/protobuf/arena.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "grpcpp/support/proto_buffer_writer.h"
#include "server/grpc_status.h"

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

}  // namespace

PlannerServiceImpl::PlannerServiceImpl(int max_concurrent_calls,
                                       int planning_threads,
                                       ServerMetrics* metrics)
    : max_concurrent_calls_(max_concurrent_calls),
      metrics_(metrics),
      core_(metrics) {
  const int threads =
      planning_threads > 0
          ? planning_threads
          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
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

grpc::ServerUnaryReactor* PlannerServiceImpl::Handle(
    Method method, grpc::CallbackServerContext* context,
    std::function<absl::Status(const StopFunction&)> work) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (inflight_.fetch_add(1) >= max_concurrent_calls_) {
    inflight_.fetch_sub(1);
    if (metrics_ != nullptr)
      metrics_->CallRejected(method, grpc::StatusCode::RESOURCE_EXHAUSTED);
    reactor->Finish(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("server busy: ", max_concurrent_calls_,
                     " calls in flight; retry later or on another replica")));
    return reactor;
  }
  if (metrics_ != nullptr) metrics_->CallStarted();
  const absl::Time start = absl::Now();
  Submit([this, method, context, reactor, start, work = std::move(work)] {
    const auto deadline = context->deadline();
    auto deadline_passed = [deadline] {
      return std::chrono::system_clock::now() > deadline;
    };
    const StopFunction should_stop = [context, deadline_passed] {
      return context->IsCancelled() || deadline_passed();
    };
    absl::Status status = should_stop()
                              ? absl::CancelledError("the call was cancelled")
                              : work(should_stop);
    if (absl::IsCancelled(status) && deadline_passed()) {
      status = absl::DeadlineExceededError(
          "the deadline passed before the work was done");
    }
    grpc::Status result = ToGrpcStatus(status);
    inflight_.fetch_sub(1);
    if (metrics_ != nullptr)
      metrics_->CallFinished(method, result.error_code(), absl::Now() - start);
    reactor->Finish(result);
  });
  return reactor;
}

template <typename Request, typename Call>
grpc::ServerUnaryReactor* PlannerServiceImpl::Serve(
    Method method, grpc::CallbackServerContext* context,
    const grpc::ByteBuffer* request, grpc::ByteBuffer* response, Call call) {
  return Handle(
      method, context,
      [request, response, call = std::move(call)](const StopFunction& stop) {
        google::protobuf::Arena arena(RequestArenaOptions());
        auto* message = google::protobuf::Arena::CreateMessage<Request>(&arena);
        grpc::ByteBuffer bytes(*request);  // shares the slices
        if (!grpc::GenericDeserialize<grpc::ProtoBufferReader, Request>(
                 &bytes, message)
                 .ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat("request: not a valid ",
                           Request::descriptor()->full_name(), " message"));
        }
        auto result = call(*message, stop);
        if (!result.ok()) return result.status();
        bool own_buffer = false;
        const grpc::Status written =
            grpc::GenericSerialize<grpc::ProtoBufferWriter,
                                   typename decltype(result)::value_type>(
                *result, response, &own_buffer);
        if (!written.ok()) {
          return absl::InternalError("the response could not be serialized");
        }
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::Plan(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return Serve<v1::PlanRequest>(
      Method::kPlan, context, request, response,
      [this](const v1::PlanRequest& r, const StopFunction& stop) {
        return core_.Plan(r, stop);
      });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::Simulate(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return Serve<v1::SimulateRequest>(
      Method::kSimulate, context, request, response,
      [this](const v1::SimulateRequest& r, const StopFunction&) {
        return core_.Simulate(r);
      });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::Compare(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return Serve<v1::CompareRequest>(
      Method::kCompare, context, request, response,
      [this](const v1::CompareRequest& r, const StopFunction& stop) {
        return core_.Compare(r, stop);
      });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::Frontier(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return Serve<v1::FrontierRequest>(
      Method::kFrontier, context, request, response,
      [this](const v1::FrontierRequest& r, const StopFunction& stop) {
        return core_.Frontier(r, stop);
      });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::GenerateTrace(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return Serve<v1::GenerateTraceRequest>(
      Method::kGenerateTrace, context, request, response,
      [this](const v1::GenerateTraceRequest& r, const StopFunction&) {
        return core_.GenerateTrace(r);
      });
}

}  // namespace slackswap
