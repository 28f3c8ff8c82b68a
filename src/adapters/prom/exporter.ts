// The Node exporter: prom-client's registry writes the app's families (core/metrics.ts) in the text
// format, beside prom-client's own process metrics (CPU, memory, event loop lag, garbage collection).
import { collectDefaultMetrics, Registry } from 'prom-client'
import type { Family, MetricRegistry, MetricsExporter } from '../../core/metrics.js'

/** A family as prom-client reads a metric: a name, and get() with its values. */
function asPromMetric(family: Family) {
  return {
    name: family.name,
    help: family.help,
    type: family.type,
    async get() {
      const c = family.collect()
      return {
        name: c.name,
        help: c.help,
        type: c.type,
        aggregator: 'sum' as const,
        values: c.samples.map((s) => ({ metricName: s.name, labels: { ...s.labels }, value: s.value })),
      }
    },
  }
}

/** Node's process metrics: one registry per process, however many apps it serves (each collector starts monitors). */
let processRegistry: Registry | undefined
function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry })
  }
  return processRegistry
}

/** The registry's families and Node's process metrics, written by prom-client. */
export function promExporter(registry: MetricRegistry, options: { processMetrics?: boolean } = {}): MetricsExporter {
  const prom = new Registry()
  for (const family of registry.all()) prom.registerMetric(asPromMetric(family) as unknown as Parameters<Registry['registerMetric']>[0])
  const process = options.processMetrics === false ? undefined : processMetrics()
  return {
    contentType: prom.contentType,
    async text() {
      const own = await prom.metrics()
      return process === undefined ? own : own + (await process.metrics())
    },
  }
}
