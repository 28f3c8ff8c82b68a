// Reads Prometheus text with a real parser (parse-prometheus-text-format, a port of the Python
// client's), so that a test checks what Prometheus would read, not what our own writer meant. The
// parser folds a histogram's samples into one and drops their labels, so histograms are read a
// second time as their plain _bucket, _sum and _count series, each line with its labels.
// @ts-expect-error: the package ships no types
import parsePrometheusTextFormat from 'parse-prometheus-text-format'

interface ParsedSample {
  value?: string
  labels?: Record<string, string>
  buckets?: Record<string, string>
  count?: string
  sum?: string
}

export interface ParsedFamily {
  name: string
  help: string
  type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED'
  metrics: ParsedSample[]
}

export class Scrape {
  readonly families: Map<string, ParsedFamily>
  /** The same text with histograms' TYPE lines left out: their series as untyped families, labels kept. */
  private readonly series: Map<string, ParsedFamily>
  constructor(readonly text: string) {
    const parsed = parsePrometheusTextFormat(text) as ParsedFamily[]
    this.families = new Map(parsed.map((f) => [f.name, f]))
    const plain = text
      .split('\n')
      .filter((line) => !/^# (TYPE|HELP) \S+ /.test(line) || !this.families.get(line.split(' ')[2] as string)?.type.startsWith('HISTOGRAM'))
      .join('\n')
    // One label set's _bucket, _sum and _count lines come before the next set's: each name recurs.
    this.series = new Map()
    for (const f of parsePrometheusTextFormat(plain) as ParsedFamily[]) {
      const seen = this.series.get(f.name)
      if (seen === undefined) this.series.set(f.name, { ...f, metrics: [...f.metrics] })
      else seen.metrics.push(...f.metrics)
    }
  }

  family(name: string): ParsedFamily {
    const f = this.families.get(name)
    if (f === undefined) throw new Error(`no metric ${name} in the scrape`)
    return f
  }

  private sample(name: string, labels: Record<string, string>): ParsedSample | undefined {
    return this.family(name).metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
  }

  /** A counter's or gauge's value for these labels; undefined if no sample has them. */
  value(name: string, labels: Record<string, string> = {}): number | undefined {
    const s = this.sample(name, labels)
    return s?.value === undefined ? undefined : Number(s.value)
  }

  /** A histogram's count, sum and cumulative buckets for these labels; undefined if it has no series with them. */
  histogram(name: string, labels: Record<string, string> = {}): { count: number; sum: number; buckets: Map<string, number> } | undefined {
    if (this.family(name).type !== 'HISTOGRAM') throw new Error(`${name} is not a histogram`)
    const matches = (m: ParsedSample) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v)
    const one = (suffix: string) => this.series.get(`${name}${suffix}`)?.metrics.find(matches)?.value
    const count = one('_count')
    const sum = one('_sum')
    if (count === undefined || sum === undefined) return undefined
    const buckets = new Map(
      (this.series.get(`${name}_bucket`)?.metrics ?? []).filter(matches).map((m) => [m.labels?.le as string, Number(m.value)] as const),
    )
    return { count: Number(count), sum: Number(sum), buckets }
  }

  /** The anteroom_* families, name → type. */
  anteroomTypes(): Map<string, string> {
    return new Map([...this.families.values()].filter((f) => f.name.startsWith('anteroom_')).map((f) => [f.name, f.type]))
  }
}
