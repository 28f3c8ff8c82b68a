// The HTML report of a simulated sale: summary, scaling, verdicts, prediction against the run, and
// charts drawn as inline SVG (no external libraries, no network).

import { percentile } from '../scripts/lib/stats.js'
import { barChart, boxChart, esc, lineChart, type Series } from './charts.js'
import type { Prediction } from './predict.js'
import type { SimResult } from './simulate.js'
import { nothingFreeStretches, sellOut, waits } from './verdicts.js'

// The charts are sim/charts.ts; lineChart re-exported for the origin's report (origin-commands.ts).
export { lineChart } from './charts.js'

/** Prediction series in sale minutes; `perStep` sale seconds per model step. */
function predSeries(values: number[], perStep: number): [number, number][] {
  return values.map((v, i) => [(i * perStep) / 60, v])
}

function perMinute(values: number[], perStep: number): [number, number][] {
  const bins = new Map<number, number>()
  values.forEach((v, i) => {
    const m = Math.floor((i * perStep) / 60)
    bins.set(m, (bins.get(m) ?? 0) + v)
  })
  return [...bins].sort((a, b) => a[0] - b[0]).map(([m, v]) => [m + 0.5, v])
}

export interface Comparison {
  rows: { what: string; predicted: string; predictedRun: string; measured: string }[]
}

export function compare(r: SimResult): Comparison {
  const s = r.options.scale
  const w = waits(r.visitors, s)
  const maxQueue = r.samples.reduce((m, x) => Math.max(m, x.waiting), 0)
  // A scheduled sale is predicted from its opening.
  const lastAdmit = r.visitors.reduce((m, v) => Math.max(m, v.admittedReceived ?? 0), 0) - (r.scheduled?.opensAt ?? 0)
  const f = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? '-' : `${Math.round(x)}`)
  const p: Prediction = r.prediction
  const q: Prediction = r.predictionOfRun
  return {
    rows: [
      { what: 'max queue length', predicted: f(p.maxQueue), predictedRun: f(q.maxQueue), measured: f(maxQueue) },
      { what: 'wait p50 (sale s)', predicted: f(p.p50), predictedRun: f(q.p50 * s), measured: f(percentile(w, 50)) },
      { what: 'wait p95 (sale s)', predicted: f(p.p95), predictedRun: f(q.p95 * s), measured: f(percentile(w, 95)) },
      { what: 'wait p99 (sale s)', predicted: f(p.p99), predictedRun: f(q.p99 * s), measured: f(percentile(w, 99)) },
      {
        what: 'last patient visitor admitted (sale min)',
        predicted: p.drainedAt === undefined ? '-' : (p.drainedAt / 60).toFixed(1),
        predictedRun: q.drainedAt === undefined ? '-' : ((q.drainedAt * s) / 60).toFixed(1),
        measured: ((lastAdmit / 1000) * (s / 60)).toFixed(1),
      },
      { what: 'admitted', predicted: f(p.admittedTotal), predictedRun: f(q.admittedTotal), measured: f(w.length) },
    ],
  }
}

/** A scheduled sale: the pre-queue, the draw, the joins and the bot farm. Empty for other sales. */
function scheduledSection(r: SimResult): string {
  const x = r.scheduled
  if (x === undefined) return ''
  const sale = (ms: number) => `${((ms * r.options.scale) / 1000).toFixed(0)} sale s`
  const rows: [string, string][] = [
    ['pre-queue / opening', `${sale(x.prequeueAt)} / ${sale(x.opensAt)} into the run`],
    [
      'humans in the pre-queue / after the opening',
      `${x.prequeueHumans} / ${x.lateHumans} (${x.lateButCameBefore} of them had sent their first request before it)`,
    ],
    ['entrants of the published draw', String(x.drawn)],
    ['humans came from', `${x.humanNetworks} loopback /24s`],
  ]
  if (x.bots)
    rows.push(
      [
        'bot farm',
        `${x.bots.clients} clients on ${x.bots.networks} /24s: ${x.bots.joins} joins, ${x.bots.places} places, ${x.bots.refused} refused (429)`,
      ],
      [
        'bots’ proofs of work',
        `${x.bots.solved} solved of ${x.bots.challenges} challenges, ${(x.bots.solveMs / Math.max(1, x.bots.solved)).toFixed(1)} real ms each`,
      ],
    )
  if (x.humanPow)
    rows.push([
      'humans’ proofs of work',
      `${x.humanPow.solves} solves, ${Math.round(x.humanPow.meanHashes)} hashes each on average (about ${((x.humanPow.meanHashes * 4) / 1000).toFixed(1)} ms in a browser at the 4 µs a hash src/http/pow.ts gives for headless Chromium); solved here with node:crypto in ${x.humanPow.meanMs.toFixed(1)} ms mean, ${x.humanPow.p95Ms.toFixed(1)} ms p95`,
    ])
  return `<h2>Scheduled sale</h2>
<p>The room opened its pre-queue ${sale(x.prequeueAt)} into the run and the sale ${sale(x.opensAt)}; a pre-queue visitor's wait is counted from the opening. Bot places are polled like anyone's and count in the store-side verdicts, not in the waits.</p>
<table>${rows.map(([k, v]) => `<tr><td>${esc(k)}</td><td>${esc(v)}</td></tr>`).join('')}</table>`
}

/** A sold-out sale: when the event ran out as the gate counted it, and what visitors were told. */
function soldOutSection(r: SimResult): { text: string; chart: string } {
  const gate = r.gate
  if (gate === undefined) return { text: '', chart: '' }
  const s = r.options.scale
  const toMin = (ms: number) => (ms / 1000) * (s / 60)
  const at = (ms: number | undefined) =>
    ms === undefined ? 'never' : `${(ms / 1000).toFixed(2)} real s (${toMin(ms).toFixed(1)} sale min)`
  const out = sellOut(gate)
  const sales = r.visitors.flatMap((v) => (v.boughtAt === undefined ? [] : [v.boughtAt]))
  const told = r.visitors.filter((v) => v.soldOutToldAt !== undefined)
  const held = r.visitors.filter((v) => (v.heldAnswers ?? 0) > 0).length
  const known = gate.filter((g) => g.free !== undefined)
  const rows: [string, string][] = [
    ['gate counts read', `${gate.length} (${gate.length - known.length} without counts)`],
    ['nothing free from', at(out?.nothingFreeAt)],
    ['everything sold from', at(out?.soldOutAt)],
    ['last sale (answer to the last confirm)', at(sales.length === 0 ? undefined : Math.max(...sales))],
    [
      'visitors told sold out (they left)',
      `${told.length}, of whom ${told.filter((v) => v.serverArrival !== undefined).length} had a place in line`,
    ],
    ['visitors told everything is held', String(held)],
    [
      'what the edge acted on (its admin stats, once a second)',
      Object.entries(r.edgeStates ?? {})
        .map(([k, n]) => `${k} ${n}`)
        .join(', ') || 'not read',
    ],
  ]
  // Stretches with nothing free before the last one: a hold released or lapsed, the line moved again.
  const stretches = nothingFreeStretches(gate, 0, 0)
  if (stretches.length > 1) {
    const resumed = stretches.slice(0, -1).map(([, end]) => (r.admissions ?? []).filter((t) => t > end && t < end + 5000).length)
    rows.push([
      'stretches with nothing free, then something again',
      `${stretches.length - 1}; the store granted ${resumed.join(', ')} in the 5 s after each (holds came back)`,
    ])
  }
  const text = `<h2>Sold out</h2>
<p>The room was linked to the event (<code>event: "demo"</code>): the booking origin keeps the event's stock in the claim gate, every edge reads its counts once a second, and while nothing is free nobody new is let in (state <code>all_held</code> while some is held, <code>sold_out</code> once all is sold). The simulator read the same counts every 250 ms.</p>
<table>${rows.map(([k, v]) => `<tr><td>${esc(k)}</td><td>${esc(v)}</td></tr>`).join('')}</table>`
  const series = (key: 'free' | 'held' | 'sold', name: string, color: string): Series => ({
    name,
    points: known.map((g) => [toMin(g.t), g[key] as number]),
    color,
    step: true,
  })
  const chart = lineChart(
    "The event's stock, as the claim gate counted it",
    [series('free', 'free', '#2c6fbb'), series('held', 'held', '#e67e22'), series('sold', 'sold', '#16a085')],
    'sale minutes',
    'seats',
    toMin(r.realSeconds * 1000),
  )
  return { text, chart }
}

export function renderReport(r: SimResult): string {
  const s = r.options.scale
  const toMin = (ms: number) => (ms / 1000) * (s / 60)
  const { real, requested, effective } = r.scaling
  const xMax = Math.max(toMin(r.realSeconds * 1000), (r.prediction.drainedAt ?? 0) / 60)
  const samples = r.samples
  const queue = lineChart(
    'Queue length',
    [
      { name: 'store: waiting', points: samples.map((x) => [toMin(x.t), x.waiting]), color: '#2c6fbb' },
      { name: 'predicted (this compressed run)', points: predSeries(r.predictionOfRun.queue, s), color: '#e67e22', dashed: true },
      { name: 'predicted (uncompressed sale)', points: predSeries(r.prediction.queue, 1), color: '#8e44ad', dashed: true },
    ],
    'sale minutes',
    'visitors',
    xMax,
  )
  const active = lineChart(
    'Active sessions',
    [
      { name: 'store: active', points: samples.map((x) => [toMin(x.t), x.active]), color: '#27ae60' },
      {
        name: 'totalActiveUsers',
        points: [
          [0, real.totalActiveUsers],
          [xMax, real.totalActiveUsers],
        ],
        color: '#c0392b',
        dashed: true,
      },
      { name: 'predicted (this compressed run)', points: predSeries(r.predictionOfRun.active, s), color: '#e67e22', dashed: true },
    ],
    'sale minutes',
    'sessions',
    xMax,
  )
  const bins = new Map<number, number>()
  for (const v of r.visitors)
    if (v.admittedReceived !== undefined)
      bins.set(Math.floor(toMin(v.admittedReceived)), (bins.get(Math.floor(toMin(v.admittedReceived))) ?? 0) + 1)
  const admissions = barChart(
    'Admissions per sale minute (seen by visitors), against the setting',
    [...bins].map(([x, v]) => ({ x, v })),
    [
      {
        name: `newUsersPerMinute (${requested.newUsersPerMinute})`,
        points: [
          [0, requested.newUsersPerMinute],
          [xMax, requested.newUsersPerMinute],
        ],
        color: '#c0392b',
        dashed: true,
      },
      { name: 'predicted (this compressed run)', points: perMinute(r.predictionOfRun.admitted, s), color: '#e67e22' },
    ],
    'sale minutes',
    'admissions',
    'admitted',
    xMax,
  )
  const byArrival = new Map<number, number[]>()
  for (const v of r.visitors) {
    if (v.admittedReceived === undefined) continue
    const m = Math.floor(toMin(v.arrivedAt))
    const list = byArrival.get(m) ?? []
    list.push(toMin(v.admittedReceived - v.arrivedAt))
    byArrival.set(m, list)
  }
  const boxes = [...byArrival].map(([x, list]) => {
    list.sort((a, b) => a - b)
    return {
      x,
      n: list.length,
      min: list[0]!,
      q1: percentile(list, 25),
      med: percentile(list, 50),
      q3: percentile(list, 75),
      max: list[list.length - 1]!,
    }
  })
  const waitChart = boxChart(
    'Wait by arrival minute',
    boxes,
    [
      {
        name: 'predicted mean (this compressed run)',
        points: r.predictionOfRun.waitByArrivalMinute.map((m) => [m.minute + 0.5, (m.meanWait * s) / 60]),
        color: '#e67e22',
        dashed: true,
      },
      {
        name: 'predicted mean (uncompressed sale)',
        points: r.prediction.waitByArrivalMinute.map((m) => [m.minute + 0.5, m.meanWait / 60]),
        color: '#8e44ad',
        dashed: true,
      },
    ],
    Math.max(1, ...boxes.map((b) => b.x + 1)),
  )
  // The store's own record of admissions, per real second, against the per-second cap.
  const perSecond = new Map<number, number>()
  for (const t of r.admissions ?? []) perSecond.set(Math.floor(t / 1000), (perSecond.get(Math.floor(t / 1000)) ?? 0) + 1)
  const cap1 = Math.floor(real.newUsersPerMinute / 60) + 1
  const fault = r.fault
  const secondsChart = barChart(
    r.admissions
      ? 'Admissions per real second (the store record), against the per-second cap'
      : 'Admissions per real second: no store record',
    [...perSecond].map(([x, v]) => ({ x, v })),
    [
      {
        name: `floor(newUsersPerMinute / 60) + 1 = ${cap1}`,
        points: [
          [0, cap1],
          [r.realSeconds, cap1],
        ],
        color: '#c0392b',
        dashed: true,
      },
      ...(fault
        ? [
            {
              name: `${fault.kind} at ${(fault.start / 1000).toFixed(1)} s`,
              points: [
                [fault.start / 1000, 0],
                [fault.start / 1000, cap1 * 1.05],
              ] as [number, number][],
              color: '#8e44ad',
            },
          ]
        : []),
    ],
    'real seconds',
    'admissions',
    'admitted',
    r.realSeconds,
  )
  const faultSection = fault
    ? `<h2>Store fault</h2>
<p><b>${esc(fault.kind)}</b> at ${(fault.start / 1000).toFixed(1)} real s (${toMin(fault.start).toFixed(1)} sale min); the simulator's own connection saw the store answer again ${((fault.end - fault.start) / 1000).toFixed(2)} s later.
${fault.recovering ? `Visitors were answered <code>recovering</code> from ${((fault.recovering[0] - fault.start) / 1000).toFixed(1)} to ${((fault.recovering[1] - fault.start) / 1000).toFixed(1)} s after it.` : 'No visitor was answered <code>recovering</code>.'}
${fault.busy > 0 ? `${fault.busy} polls were answered busy (503) while the store was away.` : ''} ${esc(fault.note ?? '')}
The visitors' polls before the fault and after the store was back are compared apart for FIFO (see the verdict).</p>`
    : ''
  const sales = r.visitors.filter((v) => v.boughtAt !== undefined).sort((a, b) => a.boughtAt! - b.boughtAt!)
  let cum = 0
  const sold = lineChart(
    'Seats sold',
    [
      {
        name: 'seats sold',
        points: [[0, 0], ...sales.map((v) => [toMin(v.boughtAt!), (cum += v.tickets.length)] as [number, number])],
        color: '#16a085',
        step: true,
      },
      {
        name: `seats (${r.booking.seats})`,
        points: [
          [0, r.booking.seats],
          [xMax, r.booking.seats],
        ],
        color: '#c0392b',
        dashed: true,
      },
    ],
    'sale minutes',
    'seats',
    xMax,
  )
  const verdicts = r.verdicts
    .map(
      (v) =>
        `<tr class="${v.info ? 'info' : v.ok ? 'ok' : 'bad'}"><td>${v.info ? 'INFO' : v.ok ? 'PASS' : 'FAIL'}</td><td>${esc(v.name)}</td><td>${esc(v.measured)}</td><td>${esc(v.limit)}</td><td>${esc(v.detail)}</td></tr>`,
    )
    .join('')
  const scaleRows = (Object.keys(requested) as (keyof typeof requested)[])
    .map((k) => `<tr><td>${k}</td><td>${requested[k]}</td><td>${real[k]}</td><td>${+effective[k].toFixed(2)}</td></tr>`)
    .join('')
  const cmp = compare(r)
    .rows.map((x) => `<tr><td>${esc(x.what)}</td><td>${x.predicted}</td><td>${x.predictedRun}</td><td>${x.measured}</td></tr>`)
    .join('')
  const o = r.options
  const gaveUp = r.visitors.filter((v) => v.abandoned).length
  const admitted = r.visitors.filter((v) => v.admittedReceived !== undefined).length
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Anteroom sale simulation</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:820px;color:#222}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}
table{border-collapse:collapse;width:100%;margin:8px 0}td,th{border:1px solid #ddd;padding:4px 6px;text-align:left;vertical-align:top}
tr.ok td:first-child{color:#1e7e34;font-weight:600}tr.bad td:first-child{color:#b00020;font-weight:700}tr.bad{background:#fdecee}tr.info td:first-child{color:#555}
figure{margin:18px 0}figcaption{font-weight:600;margin-bottom:4px}svg{width:100%;height:auto;font-size:11px;fill:#444}
.legend span{margin-right:14px;font-size:12px}.legend i{display:inline-block;width:22px;margin-right:4px;vertical-align:middle}
.verdict{font-size:18px;font-weight:700}.pass{color:#1e7e34}.fail{color:#b00020}
</style></head><body>
<h1>Anteroom sale simulation</h1>
<p class="verdict ${r.ok ? 'pass' : 'fail'}">${r.ok ? 'All verdicts pass' : 'Some verdicts fail'}</p>
<p>${o.visitors} visitors, arrival curve <b>${o.curve.kind}</b>${o.curve.kind === 'opening' ? '' : ` over ${o.curve.durationSeconds} sale seconds`}${o.curve.kind === 'waves' ? ` (${o.curve.waves ?? 3} waves)` : ''};
${Math.round(o.abandonShare * 100)}% give up after ~${o.patienceSeconds} s (exponential); ${Math.round(o.buyShare * 100)}% of admitted visitors try to buy.
Started ${esc(r.startedAt)}; ran ${r.realSeconds.toFixed(1)} real seconds (${((r.realSeconds * s) / 60).toFixed(1)} sale minutes); ${r.requests} requests, ${r.errors} errors${r.errors > 0 ? ` (${esc(JSON.stringify(r.errorKinds))})` : ''}.${Object.keys(r.edgeEvents ?? {}).length > 0 ? ` The edge logged ${esc(JSON.stringify(r.edgeEvents))}.` : ''}
Admitted ${admitted}, gave up ${gaveUp}.${
    Object.keys(r.checkouts ?? {}).length > 0
      ? ` Holds: ${esc(
          Object.entries(r.checkouts)
            .map(([k, n]) => `${k} ${n}`)
            .join(', '),
        )}.`
      : ''
  } Edge: ${o.edgeUrl ? `external edge ${esc(o.edgeUrl)}` : o.runtime === 'worker' ? `Worker in workerd (Miniflare), ${o.fault?.kind === 'failover' ? 'a Sentinel set' : 'Redis'} via StoreRelay` : `Node, ${o.fault?.kind === 'failover' ? 'a Sentinel set' : o.redis || o.fault ? 'Redis' : 'embedded store'}`}; seed ${o.seed}${o.browseSeconds ? `; admitted visitors browse about ${o.browseSeconds} s` : ''}.</p>
<h2>Verdicts</h2>
<table><tr><th></th><th>verdict</th><th>measured</th><th>limit</th><th>how</th></tr>${verdicts}</table>
${faultSection}
${scheduledSection(r)}
${soldOutSection(r).text}
<h2>How the run was scaled</h2>
<p>Time compression <b>${s}x</b>: one real second is ${s} sale seconds. Durations were divided by ${s} and newUsersPerMinute multiplied by ${s}, so that admissions per sale minute match; totalActiveUsers is a count and unchanged. Charts are in sale time.</p>
<table><tr><th>setting</th><th>sale (asked)</th><th>given to the edge (real)</th><th>effective in sale time</th></tr>${scaleRows}</table>
<ul>${r.scaling.notes.map((n) => `<li>${esc(n)}</li>`).join('')}
<li>Grants are timed from the visitor side: a grant lies between the last poll that answered "queued" and the poll that answered "admitted" (a visitor granted between polls collects at the next one). Window and FIFO verdicts count only what those intervals prove, so they are never false alarms; store-side numbers come from the store's own stats, sampled every 250 ms.</li></ul>
<h2>Prediction against the run</h2>
<p>The what-if model (sim/predict.ts) replays the edge's admission rules on the expected arrival curve, one step per second of sale time ("sale": the settings as asked, uncompressed) or per tenth of a real second ("this run": the settings given to the edge, in real time, scaled back to sale time). Waits end when the visitor's page sees the admission: the grant, plus a delay spread evenly over one refresh interval, since the page learns of it at its next poll; the session, and so the slot, runs from then.</p>
<table><tr><th></th><th>predicted (sale)</th><th>predicted (this run)</th><th>measured</th></tr>${cmp}</table>
<h2>Charts</h2>
${queue}${active}${admissions}${secondsChart}${waitChart}${sold}${soldOutSection(r).chart}
</body></html>
`
}
