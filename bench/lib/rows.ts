// The table `npm run bench` prints: a measurement's rows, notes and results, and a row of a ratio.
import { fmtRps } from './common.js'
import { type Aggregate, GENERATOR } from './paired.js'

/** What a measurement gives `npm run bench`: its rows of the table, notes, warnings and part of results.json. */
export interface Measured {
  rows: Row[]
  notes: string[]
  warnings: string[]
  results: Record<string, unknown>
}

/** One row of the table `npm run bench` prints (and of results.json). met: null for information only. */
export interface Row {
  id: string
  measurement: string
  value: string
  baseline: string
  ratio: string
  target: string
  met: boolean | null
  /**
   * For rows measured under load: the cores the generator (wrk) and the server under test were busy,
   * for the value's run and the baseline's, e.g. "wrk 0.45 edge 1.00 | wrk 0.70 hello 1.00".
   */
  cpu?: string
  /** Whether the generator, not the server, was the busier in either run: the ratio then says little, and a target counts as missed. */
  generatorBound?: boolean
}

/** "wrk 0.45 edge 1.00": the generator's and the server's cores in one run. */
export function cpuText(a: Aggregate): string {
  const gen = a.cpu[GENERATOR]?.cores
  const srv = a.server === undefined ? undefined : a.cpu[a.server]?.cores
  const f = (n: number | undefined) => (n === undefined ? '?' : n.toFixed(2))
  return `${GENERATOR} ${f(gen)} ${a.server ?? 'server'} ${f(srv)}${a.generatorBound ? ' GENERATOR-BOUND' : ''}`
}

/**
 * A row comparing `value` with a baseline of the same run, as a ratio, against a target (or 'info').
 * With `runs` (the value's and the baseline's load runs), the row shows their CPU and is flagged when
 * the generator was the bottleneck of either.
 */
export function ratioRow(
  id: string,
  measurement: string,
  value: number,
  baseline: number,
  baselineName: string,
  fmt: (n: number) => string,
  target: { op: '>=' | '<='; value: number } | string,
  runs?: { value: Aggregate; baseline: Aggregate },
): Row {
  const ratio = value / baseline
  // A throughput row says how the two segments agreed: "0.61 (0.63, 0.59)".
  const bySegment =
    fmt === fmtRps && runs !== undefined && runs.value.segmentRps.length === runs.baseline.segmentRps.length
      ? ` (${runs.value.segmentRps.map((v, i) => (v / (runs.baseline.segmentRps[i] as number)).toFixed(2)).join(', ')})`
      : ''
  const isInfo = typeof target === 'string'
  const generatorBound = runs === undefined ? undefined : runs.value.generatorBound || runs.baseline.generatorBound
  const met = isInfo ? null : (target.op === '>=' ? ratio >= target.value : ratio <= target.value) && generatorBound !== true
  return {
    id,
    measurement,
    value: fmt(value),
    baseline: `${fmt(baseline)} (${baselineName})`,
    ratio: `${ratio.toFixed(2)}${bySegment}`,
    target: isInfo ? target : `${target.op} ${target.value.toFixed(2)}`,
    met,
    ...(runs === undefined ? {} : { cpu: `${cpuText(runs.value)} | ${cpuText(runs.baseline)}`, generatorBound }),
  }
}
