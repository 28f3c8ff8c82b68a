// What origin commands gain (issue #13 §4): the same sale (same seed, so the same arrivals and
// choices) without and with `Anteroom-Command: end-session` after a purchase, side by side: seats
// sold per sale minute, when the seats ran out, and the waits. `--origin-commands compare` writes it.
import { percentile } from '../scripts/lib/stats.js'
import { lineChart, renderReport } from './report.js'
import type { SimResult } from './simulate.js'
import { waits } from './verdicts.js'

export interface CommandsComparison {
  /** One row a measure: its name, without, with. */
  rows: { what: string; off: string; on: string }[]
  /** Seats sold in each sale minute (minute 0 first), without and with. */
  perMinute: { minute: number; off: number; on: number }[]
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

/** Sale minute of a real ms time. */
const saleMinute = (r: SimResult, ms: number) => (ms * r.options.scale) / 60_000

/** Tickets sold in each sale minute. */
function soldPerMinute(r: SimResult): number[] {
  const out: number[] = []
  for (const v of r.visitors) {
    if (v.boughtAt === undefined) continue
    const m = Math.floor(saleMinute(r, v.boughtAt))
    out[m] = (out[m] ?? 0) + v.tickets.length
  }
  return Array.from(out, (n) => n ?? 0)
}

function measures(r: SimResult) {
  const w = waits(r.visitors, r.options.scale)
  const sold = r.visitors.reduce((n, v) => n + v.tickets.length, 0)
  const last = r.visitors.reduce((t, v) => (v.boughtAt === undefined ? t : Math.max(t, v.boughtAt)), 0)
  const buying = r.visitors.filter((v) => v.boughtAt !== undefined)
  const ended = r.visitors.filter((v) => v.sessionEndedAt !== undefined).length
  const firstMinutes = soldPerMinute(r)
  return {
    sold,
    seats: r.booking.seats,
    lastSale: buying.length === 0 ? undefined : saleMinute(r, last),
    admitted: r.visitors.filter((v) => v.admittedReceived !== undefined).length,
    ended,
    p50: percentile(w, 50),
    p95: percentile(w, 95),
    p99: percentile(w, 99),
    maxActive: r.samples.reduce((m, s) => Math.max(m, s.active), 0),
    bestMinute: Math.max(0, ...firstMinutes),
    ok: r.ok,
  }
}

export function compareCommands(off: SimResult, on: SimResult): CommandsComparison {
  const [a, b] = [measures(off), measures(on)]
  const s = (x: number) => (Number.isNaN(x) ? '-' : `${Math.round(x)} s`)
  const min = (x: number | undefined) => (x === undefined ? '-' : `${x.toFixed(1)}`)
  const rows = [
    { what: 'seats sold (of the event)', off: `${a.sold} of ${a.seats}`, on: `${b.sold} of ${b.seats}` },
    { what: 'last seat sold at (sale minute)', off: min(a.lastSale), on: min(b.lastSale) },
    {
      what: 'seats sold per sale minute, mean to the last sale',
      off: a.lastSale ? (a.sold / Math.max(1, a.lastSale)).toFixed(1) : '-',
      on: b.lastSale ? (b.sold / Math.max(1, b.lastSale)).toFixed(1) : '-',
    },
    { what: 'seats sold in the best sale minute', off: String(a.bestMinute), on: String(b.bestMinute) },
    { what: 'wait p50 (sale s)', off: s(a.p50), on: s(b.p50) },
    { what: 'wait p95 (sale s)', off: s(a.p95), on: s(b.p95) },
    { what: 'wait p99 (sale s)', off: s(a.p99), on: s(b.p99) },
    { what: 'visitors admitted', off: String(a.admitted), on: String(b.admitted) },
    { what: 'sessions ended by the origin', off: String(a.ended), on: String(b.ended) },
    { what: 'max active, store', off: String(a.maxActive), on: String(b.maxActive) },
    { what: 'verdicts', off: a.ok ? 'all pass' : 'some fail', on: b.ok ? 'all pass' : 'some fail' },
  ]
  const [pa, pb] = [soldPerMinute(off), soldPerMinute(on)]
  const perMinute = Array.from({ length: Math.max(pa.length, pb.length) }, (_, minute) => ({
    minute,
    off: pa[minute] ?? 0,
    on: pb[minute] ?? 0,
  }))
  return { rows, perMinute }
}

/** Cumulative seats sold over sale minutes. */
function soldSeries(r: SimResult): [number, number][] {
  let cum = 0
  const sales = r.visitors.filter((v) => v.boughtAt !== undefined).sort((x, y) => (x.boughtAt as number) - (y.boughtAt as number))
  return [[0, 0], ...sales.map((v) => [saleMinute(r, v.boughtAt as number), (cum += v.tickets.length)] as [number, number])]
}

/** One HTML page: the comparison, then each run's full report. */
export function renderCommandsReport(off: SimResult, on: SimResult): string {
  const c = compareCommands(off, on)
  const o = off.options
  const rows = c.rows.map((r) => `<tr><td>${esc(r.what)}</td><td>${esc(r.off)}</td><td>${esc(r.on)}</td></tr>`).join('')
  const minutes = c.perMinute.map((m) => `<tr><td>${m.minute}</td><td>${m.off}</td><td>${m.on}</td></tr>`).join('')
  const chart = lineChart(
    'Seats sold, without and with end-session',
    [
      { name: 'without', points: soldSeries(off), color: '#7f8c8d', step: true },
      { name: 'with end-session', points: soldSeries(on), color: '#16a085', step: true },
    ],
    'sale minutes',
    'seats',
  )
  const frame = (title: string, r: SimResult) =>
    `<details><summary>${esc(title)}</summary><iframe title="${esc(title)}" srcdoc="${esc(renderReport(r))}"></iframe></details>`
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Anteroom: what origin commands gain</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:820px;color:#222}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}
table{border-collapse:collapse;width:100%;margin:8px 0}td,th{border:1px solid #ddd;padding:4px 6px;text-align:left;vertical-align:top}
figure{margin:18px 0}figcaption{font-weight:600;margin-bottom:4px}svg{width:100%;height:auto;font-size:11px;fill:#444}
.legend span{margin-right:14px;font-size:12px}.legend i{display:inline-block;width:22px;margin-right:4px;vertical-align:middle}
iframe{width:100%;height:900px;border:1px solid #ddd}summary{cursor:pointer;margin:8px 0}
</style></head><body>
<h1>What origin commands gain</h1>
<p>The same sale twice, same seed (so the same arrivals, give-ups and purchases): first without origin commands, then with the room's
<code>originCommands: end-session</code> and the booking origin sending <code>Anteroom-Command: end-session</code> with each confirmed purchase,
which ends the buyer's session and frees the slot at once. ${o.visitors} visitors, <b>${o.curve.kind}</b>${o.curve.kind === 'opening' ? '' : ` over ${o.curve.durationSeconds} sale s`};
${o.limits.totalActiveUsers} active at most, ${o.limits.newUsersPerMinute} a minute, session ${o.limits.sessionDurationSeconds} s;
${Math.round(o.buyShare * 100)}% of admitted visitors try to buy; ${o.scale}x; seed ${o.seed}.</p>
<table><tr><th></th><th>without</th><th>with end-session</th></tr>${rows}</table>
${chart}
<h2>Seats sold per sale minute</h2>
<table><tr><th>sale minute</th><th>without</th><th>with end-session</th></tr>${minutes}</table>
<h2>Each run</h2>
${frame('Without origin commands: the full report', off)}
${frame('With end-session: the full report', on)}
</body></html>
`
}
