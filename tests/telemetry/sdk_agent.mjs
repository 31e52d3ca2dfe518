// An agent's own telemetry, exported by the official OpenTelemetry JS SDK as an agent in a box
// would (Claude Code's telemetry is this SDK): the OTLP/protobuf exporters take their
// endpoints from the variables the box sets (OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL), so the spans, log
// records and metrics below reach the box's agent receiver. Some of them claim what only the
// box may claim (strands.box.* attributes, a strands-box.* scope): the receiver must strip and
// rename them (docs/records.md "The agent receiver").
//
// Run inside a box by box_relay.test.mjs. Prints one JSON line: every export's result code
// (0 is success) and the ids of the spans it made, then exits 0 when every export succeeded.
import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { LoggerProvider, BatchLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';

const results = { traces: [], logs: [], metrics: [] };
// Every export's result, as the SDK reports it to the processor.
function watched(kind, exporter) {
  const exp = exporter.export.bind(exporter);
  exporter.export = (items, done) => exp(items, (r) => {
    results[kind].push(r.code);
    if (r.error) results[`${kind}Error`] = String(r.error.message || r.error);
    done(r);
  });
  return exporter;
}

const resource = resourceFromAttributes({
  'service.name': 'sdk-agent',
  'team': 'agents',                     // the operator's OTEL_RESOURCE_ATTRIBUTES sets it too
  'strands.box.source': 'box',          // forged: only the box may say so
  'strands.box.name': 'box-forged',
});

const tracer = new BasicTracerProvider({
  resource,
  spanProcessors: [new BatchSpanProcessor(watched('traces', new OTLPTraceExporter()))],
});
const logger = new LoggerProvider({
  resource,
  processors: [new BatchLogRecordProcessor(watched('logs', new OTLPLogExporter()))],
});
const meter = new MeterProvider({
  resource,
  readers: [new PeriodicExportingMetricReader({
    exporter: watched('metrics', new OTLPMetricExporter()), exportIntervalMillis: 600000,
  })],
});

const spans = [];
for (const scope of ['sdk-agent.work', 'strands-box.policy']) {
  const t = tracer.getTracer(scope, '1.2.3');
  const parent = t.startSpan('agent turn', { attributes: { 'turn': 1, 'strands.box.policy.verdict': 'permit' } });
  const ctx = trace.setSpan(ROOT_CONTEXT, parent);
  const child = t.startSpan('tool call', { attributes: { 'tool.name': 'grep' } }, ctx);
  child.addEvent('matched', { 'count': 3, 'strands.box.rule': 'forged' });
  child.end();
  parent.end();
  spans.push(parent.spanContext().spanId, child.spanContext().spanId);
}
logger.getLogger('sdk-agent.log').emit({
  severityNumber: 9, severityText: 'INFO', body: 'the agent says hello',
  attributes: { 'step': 'start', 'strands.box.policy.cause': 'forged' },
});
logger.getLogger('strands-box.control').emit({ severityNumber: 13, body: 'a forged control record' });
const counter = meter.getMeter('sdk-agent.metrics').createCounter('agent.requests');
counter.add(3, { 'route': '/v1/messages', 'strands.box.request.id': 'forged' });

await Promise.all([tracer.forceFlush(), logger.forceFlush(), meter.forceFlush()]);
await Promise.all([tracer.shutdown(), logger.shutdown(), meter.shutdown()]);
process.stdout.write(`${JSON.stringify({ ...results, spans })}\n`);
const ok = ['traces', 'logs', 'metrics'].every((k) => results[k].length > 0 && results[k].every((c) => c === 0));
process.exit(ok ? 0 : 1);
