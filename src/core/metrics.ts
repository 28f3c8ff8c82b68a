// Prometheus metrics with no runtime in them: metric families, the cells that hot paths bump without
// allocating, and the text exposition format (version 0.0.4). The edge (src/http/metrics.ts) and the
// booking origin (src/booking/metrics.ts) declare their families here once; Node hands them to
// prom-client's registry (src/adapters/prom/exporter.ts), the Worker writes them with formatText.

export type MetricType = 'counter' | 'gauge' | 'histogram'

/** One line of the exposition: `name{labels} value`. */
export interface Sample {
  name: string
  labels: Readonly<Record<string, string>>
  value: number
}

/** A family as collected for one scrape. */
export interface Collected {
  name: string
  help: string
  type: MetricType
  samples: Sample[]
}

export interface Family {
  readonly name: string
  readonly help: string
  readonly type: MetricType
  collect(): Collected
}

/** The buckets (upper bounds, seconds) of latencies: the edge's polls and store calls, the origin's statements; 0.5 ms to 5 s. */
export const LATENCY_BUCKETS: readonly number[] = Object.freeze([
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
])

/**
 * The buckets (upper bounds, seconds) of visitors' time in queue, from their arrival to the admission
 * they were given: 5 s to 24 h, about two to a factor of three. The analytics keep per-minute counts
 * of these same buckets, so a report's percentiles have this resolution.
 */
export const QUEUE_WAIT_BUCKETS: readonly number[] = Object.freeze([
  5, 10, 20, 30, 60, 120, 180, 300, 600, 900, 1200, 1800, 2700, 3600, 5400, 7200, 10800, 14400, 21600, 43200, 86400,
])

/** Label values as one key. */
function keyOf(values: readonly string[]): string {
  return values.join('\u0000')
}

function labelsOf(names: readonly string[], values: readonly string[]): Record<string, string> {
  const labels: Record<string, string> = {}
  names.forEach((name, i) => {
    labels[name] = values[i] ?? ''
  })
  return labels
}

function checkName(name: string): void {
  if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name)) throw new TypeError(`not a metric name: ${name}`)
}

/** A counter's value for one set of labels: `cell.value++` or `cell.inc(n)`. */
export class CounterCell {
  value = 0
  inc(n = 1): void {
    this.value += n
  }
}

/** A histogram's counts for one set of labels: per bucket (not cumulative; the last is +Inf), their sum and count. */
export class HistogramCell {
  readonly counts: Float64Array
  sum = 0
  count = 0
  constructor(readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1)
  }

  observe(value: number): void {
    const bounds = this.bounds
    let i = 0
    while (i < bounds.length && value > (bounds[i] as number)) i++
    this.counts[i] = (this.counts[i] as number) + 1
    this.sum += value
    this.count++
  }
}

/** Families whose cells are made once (per label values) and then bumped in place. */
abstract class CellFamily<C> implements Family {
  abstract readonly type: MetricType
  protected readonly cells = new Map<string, { values: readonly string[]; cell: C }>()
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {
    checkName(name)
  }

  protected abstract make(): C

  /** The cell for these label values (in labelNames' order), made on first use: keep it, and bump it. */
  cell(...values: string[]): C {
    if (values.length !== this.labelNames.length) throw new TypeError(`${this.name} takes ${this.labelNames.length} label values`)
    const key = keyOf(values)
    let entry = this.cells.get(key)
    if (entry === undefined) this.cells.set(key, (entry = { values: [...values], cell: this.make() }))
    return entry.cell
  }

  abstract collect(): Collected
}

export class CounterFamily extends CellFamily<CounterCell> {
  readonly type = 'counter' as const
  protected make(): CounterCell {
    return new CounterCell()
  }

  collect(): Collected {
    const samples: Sample[] = []
    for (const { values, cell } of this.cells.values())
      samples.push({ name: this.name, labels: labelsOf(this.labelNames, values), value: cell.value })
    return { name: this.name, help: this.help, type: this.type, samples }
  }
}

export class HistogramFamily extends CellFamily<HistogramCell> {
  readonly type = 'histogram' as const
  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    readonly buckets: readonly number[],
  ) {
    super(name, help, labelNames)
    if (labelNames.includes('le')) throw new TypeError('a histogram cannot have a label named le')
  }

  protected make(): HistogramCell {
    return new HistogramCell(this.buckets)
  }

  collect(): Collected {
    const samples: Sample[] = []
    for (const { values, cell } of this.cells.values()) {
      const labels = labelsOf(this.labelNames, values)
      let cumulative = 0
      this.buckets.forEach((bound, i) => {
        cumulative += cell.counts[i] as number
        samples.push({ name: `${this.name}_bucket`, labels: { ...labels, le: formatNumber(bound) }, value: cumulative })
      })
      samples.push({ name: `${this.name}_bucket`, labels: { ...labels, le: '+Inf' }, value: cell.count })
      samples.push({ name: `${this.name}_sum`, labels, value: cell.sum })
      samples.push({ name: `${this.name}_count`, labels, value: cell.count })
    }
    return { name: this.name, help: this.help, type: this.type, samples }
  }
}

/**
 * A family read when scraped (a gauge of the line's length, a running total the store keeps): `read`
 * yields [label values, value]; a value that is not a finite number is left out.
 */
export class ReadFamily implements Family {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'gauge' | 'counter',
    readonly labelNames: readonly string[],
    private readonly read: () => Iterable<readonly [readonly string[], number]>,
  ) {
    checkName(name)
  }

  collect(): Collected {
    const samples: Sample[] = []
    for (const [values, value] of this.read())
      if (Number.isFinite(value)) samples.push({ name: this.name, labels: labelsOf(this.labelNames, values), value })
    return { name: this.name, help: this.help, type: this.type, samples }
  }
}

/** The families of one app, in the order they are written. */
export class MetricRegistry {
  private readonly families: Family[] = []

  add<F extends Family>(family: F): F {
    if (this.families.some((f) => f.name === family.name)) throw new TypeError(`metric ${family.name} is declared twice`)
    this.families.push(family)
    return family
  }

  counter(name: string, help: string, labelNames: readonly string[] = []): CounterFamily {
    return this.add(new CounterFamily(name, help, labelNames))
  }

  histogram(name: string, help: string, labelNames: readonly string[], buckets: readonly number[]): HistogramFamily {
    return this.add(new HistogramFamily(name, help, labelNames, buckets))
  }

  read(
    name: string,
    help: string,
    type: 'gauge' | 'counter',
    labelNames: readonly string[],
    read: () => Iterable<readonly [readonly string[], number]>,
  ): ReadFamily {
    return this.add(new ReadFamily(name, help, type, labelNames, read))
  }

  all(): readonly Family[] {
    return this.families
  }

  collect(): Collected[] {
    return this.families.map((f) => f.collect())
  }
}

/** A number as the exposition format writes it (Go's ParseFloat reads these). */
export function formatNumber(n: number): string {
  if (n === Number.POSITIVE_INFINITY) return '+Inf'
  if (n === Number.NEGATIVE_INFINITY) return '-Inf'
  if (Number.isNaN(n)) return 'NaN'
  return String(n)
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')
}

function escapeLabel(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')
}

/** The content type of formatText's output. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

/** The text exposition format, version 0.0.4: HELP, TYPE and the samples of each family. */
export function formatText(families: readonly Collected[]): string {
  const out: string[] = []
  for (const f of families) {
    out.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`)
    for (const s of f.samples) {
      const labels = Object.entries(s.labels)
        .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
        .join(',')
      out.push(`${s.name}${labels === '' ? '' : `{${labels}}`} ${formatNumber(s.value)}`)
    }
  }
  return `${out.join('\n')}\n`
}

/** What serves an app's metrics: prom-client's registry on Node, formatText on the Worker. */
export interface MetricsExporter {
  readonly contentType: string
  text(): Promise<string>
}

/** The runtime-free exporter: the registry's families in the text format. */
export function textExporter(registry: MetricRegistry): MetricsExporter {
  return { contentType: PROMETHEUS_CONTENT_TYPE, text: async () => formatText(registry.collect()) }
}
