// A store fault mid-sale (a flush, a restart, a failover): the recovery after it, and the extra wait
// it cost against the same sale without it.
import { percentile } from '../../scripts/lib/stats.js'
import type { AdmissionRecord, StoreFault, Verdict, VisitorRecord } from './records.js'

/**
 * After a loss the store admits nobody for 2 × refreshSeconds + 1 s, so that everybody polling is back
 * at their arrival first: no admission in its record from the loss until that long after it began,
 * and visitors were answered recovering. A failover that lost nothing needs no recovery (informational).
 */
export function recoveryVerdict(fault: StoreFault, record: AdmissionRecord | undefined, recoveryMs: number, scale: number): Verdict {
  const rel = (t: number) => `${((t - fault.start) / 1000).toFixed(1)} s`
  const firstAfter = record?.find((t) => t >= fault.end)
  const early = record?.filter((t) => t >= fault.end && t < fault.start + recoveryMs).length ?? 0
  const expected = fault.kind !== 'failover'
  const quiet = firstAfter === undefined ? undefined : firstAfter - fault.start
  return {
    name: `recovery after the ${fault.kind}`,
    ok: !expected || (fault.recovering !== undefined && early === 0),
    info: !expected,
    measured:
      `${fault.recovering ? `recovering answered ${rel(fault.recovering[0])} to ${rel(fault.recovering[1])} after it` : 'never answered recovering'}; ` +
      (quiet === undefined
        ? 'no admission after it in the store record'
        : `no admissions for ${(quiet / 1000).toFixed(1)} real s (${((quiet / 1000) * scale).toFixed(0)} sale s)` +
          (quiet > recoveryMs + 1000 ? ': the recovery, then the slots reserved for the sessions from before' : '')) +
      (early > 0 && (expected || fault.recovering !== undefined) ? `; ${early} admitted within the recovery` : '') +
      `; store back after ${((fault.end - fault.start) / 1000).toFixed(2)} s` +
      `; ${fault.reregistered} of ${fault.browsingAfter} sessions from before it that were used after it renewed${expected ? ' (re-registered)' : ''}` +
      (fault.busy > 0 ? `; ${fault.busy} polls answered busy` : ''),
    limit: expected
      ? `nobody admitted for 2 x refreshSeconds + 1 = ${(recoveryMs / 1000).toFixed(0)} real s`
      : 'no recovery needed unless the replica missed writes',
    detail:
      'From the store record: the first admission after the store was back, counted from the fault. The store admits nobody while recovering, ' +
      'so every visitor still polling is back at the arrival in their token before anyone is let in.' +
      (fault.note ? ` ${fault.note}` : ''),
  }
}

/**
 * The extra wait a fault cost: the visitors admitted after it began, against the same visitors (the
 * same seed: the same arrivals) in the same sale without the fault. Sale seconds.
 */
export function extraWait(
  visitors: VisitorRecord[],
  baseline: VisitorRecord[],
  fault: StoreFault,
  scale: number,
): { visitors: number; mean: number; p50: number; p95: number } {
  const base = new Map(baseline.map((v) => [v.id, v]))
  const diffs: number[] = []
  for (const v of visitors) {
    const b = base.get(v.id)
    if (v.admittedReceived === undefined || v.admittedReceived < fault.start || b?.admittedReceived === undefined) continue
    diffs.push(((v.admittedReceived - v.arrivedAt - (b.admittedReceived - b.arrivedAt)) * scale) / 1000)
  }
  diffs.sort((a, b) => a - b)
  return {
    visitors: diffs.length,
    mean: diffs.length === 0 ? Number.NaN : diffs.reduce((a, b) => a + b, 0) / diffs.length,
    p50: percentile(diffs, 50),
    p95: percentile(diffs, 95),
  }
}

export function extraWaitVerdict(w: ReturnType<typeof extraWait>, fault: StoreFault): Verdict {
  const f = (x: number) => (Number.isNaN(x) ? '-' : `${x >= 0 ? '+' : ''}${Math.round(x)} s`)
  return {
    name: `extra wait from the ${fault.kind}`,
    ok: true,
    info: true,
    measured: `${w.visitors} visitors admitted after it: mean ${f(w.mean)}, p50 ${f(w.p50)}, p95 ${f(w.p95)} (simulated)`,
    limit: 'informational',
    detail:
      'Each visitor admitted after the fault began, against the same visitor in the same sale (same seed and arrivals) run without it.',
  }
}
