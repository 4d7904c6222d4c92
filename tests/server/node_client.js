// A Node.js client (@grpc/grpc-js and @grpc/proto-loader from npm) against a
// running slackswap-server: generate a trace, plan it, check health.
// Usage: node node_client.js ADDRESS PROTO_DIR HEALTH_PROTO_DIR
'use strict';
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const [address, protoDir, healthDir] = process.argv.slice(2);
const options = {keepCase: true, longs: String, enums: String, defaults: true, oneofs: true,
                 includeDirs: [protoDir, healthDir]};
const service = grpc.loadPackageDefinition(
    protoLoader.loadSync('slackswap/v1/service.proto', options));
const health = grpc.loadPackageDefinition(
    protoLoader.loadSync('grpc/health/v1/health.proto', options));

const limits = {'grpc.max_receive_message_length': -1, 'grpc.max_send_message_length': -1};
const planner = new service.slackswap.v1.PlannerService(
    address, grpc.credentials.createInsecure(), limits);
const healthClient = new health.grpc.health.v1.Health(address, grpc.credentials.createInsecure());

function call(client, method, request) {
  return new Promise((resolve, reject) => {
    const deadline = new Date(Date.now() + 30000);
    client[method](request, {deadline}, (error, response) => error ? reject(error) : resolve(response));
  });
}

let passed = 0, failed = 0;
function check(name, ok, detail) {
  if (ok) { passed++; } else { failed++; console.log(`FAILED: ${name} ${detail || ''}`); }
}

(async () => {
  try {
    const generated = await call(planner, 'GenerateTrace',
        {workload_preset: 'llama-7b', hardware_preset: 'a100', layers: 4});
    check('trace has operators', generated.trace.operators.length > 20);
    const response = await call(planner, 'Plan', {
      trace: generated.trace, hardware: generated.hardware, budget: {fraction_of_peak: 0.5}});
    const report = response.report;
    check('planned', report.outcome === 'PLAN_OUTCOME_PLANNED', report.outcome);
    check('within budget', BigInt(report.metrics.peak_resident_bytes) <=
          BigInt(report.metrics.budget_bytes));
    check('one decision per tensor', report.plan.tensors.length === generated.trace.tensors.length);
    check('lower bound below the plan', BigInt(report.lower_bound_ns) <=
          BigInt(report.metrics.iteration_ns));
    for (const name of ['', 'slackswap.v1.PlannerService']) {
      const status = await call(healthClient, 'Check', {service: name});
      check(`health of '${name}'`, status.status === 'SERVING', status.status);
    }
    try {
      await call(planner, 'Plan', {trace: generated.trace, hardware: generated.hardware});
      check('missing budget is an error', false);
    } catch (error) {
      check('missing budget is INVALID_ARGUMENT', error.code === grpc.status.INVALID_ARGUMENT,
            error.code);
      check('the error names the field', /^budget: /.test(error.details), error.details);
    }
  } catch (error) {
    check('no unexpected error', false, error.stack || error);
  }
  planner.close();
  healthClient.close();
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
})();
