// Shared by the server tests: a real server on loopback and small requests
// generated through it.
#ifndef SLACKSWAP_TESTS_SERVER_TEST_SERVER_H_
#define SLACKSWAP_TESTS_SERVER_TEST_SERVER_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "server/server.h"
#include "slackswap/v1/service.grpc.pb.h"

namespace slackswap {

// A server on an ephemeral loopback port, without a metrics endpoint or a
// call log (the tests read neither).
inline std::unique_ptr<PlanningServer> StartTestServer(int max_concurrent_calls,
                                                       int planning_threads) {
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.metrics_address = "";
  options.call_log = false;
  options.max_concurrent_calls = max_concurrent_calls;
  options.planning_threads = planning_threads;
  auto server = PlanningServer::Start(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(*server) : nullptr;
}

// A Llama-7B trace of `layers` layers on the A100 preset, from the server.
inline v1::GenerateTraceResponse GenerateSmallTrace(
    v1::PlannerService::Stub& stub, int layers = 4) {
  v1::GenerateTraceRequest request;
  request.set_workload_preset("llama-7b");
  request.set_hardware_preset("a100");
  request.set_layers(layers);
  grpc::ClientContext context;
  v1::GenerateTraceResponse response;
  EXPECT_TRUE(stub.GenerateTrace(&context, request, &response).ok());
  return response;
}

// A Plan request for that trace at `fraction` of its all-keep peak.
inline v1::PlanRequest SmallPlanRequest(v1::PlannerService::Stub& stub,
                                        double fraction) {
  const v1::GenerateTraceResponse generated = GenerateSmallTrace(stub);
  v1::PlanRequest request;
  *request.mutable_trace() = generated.trace();
  *request.mutable_hardware() = generated.hardware();
  request.mutable_budget()->set_fraction_of_peak(fraction);
  return request;
}

struct RawReply {
  grpc::Status status;
  std::string bytes;  // the response's, when OK
};

// `method` of PlannerService ("Plan") called through a generic stub with
// `bytes` as the request, as given.
inline RawReply CallWithBytes(grpc::GenericStub& stub,
                              const std::string& method,
                              const std::string& bytes) {
  grpc::Slice slice(bytes.data(), bytes.size());
  const grpc::ByteBuffer request(&slice, 1);
  grpc::ClientContext context;
  grpc::ByteBuffer reply;
  std::mutex mu;
  std::condition_variable done_cv;
  bool done = false;
  RawReply result;
  stub.UnaryCall(&context, "/slackswap.v1.PlannerService/" + method,
                 grpc::StubOptions(), &request, &reply,
                 [&](const grpc::Status& s) {
                   std::lock_guard<std::mutex> lock(mu);
                   result.status = s;
                   done = true;
                   done_cv.notify_one();
                 });
  std::unique_lock<std::mutex> lock(mu);
  done_cv.wait(lock, [&] { return done; });
  if (!result.status.ok()) return result;
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(reply.Dump(&slices).ok());
  for (const grpc::Slice& s : slices)
    result.bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return result;
}

}  // namespace slackswap

#endif  // SLACKSWAP_TESTS_SERVER_TEST_SERVER_H_
