// The charts of the simulator's HTML report (report.ts), drawn as inline SVG with no library: a line
// chart, a bar chart and a box chart on one frame, and the HTML escape the report uses.

export interface Series {
  name: string
  points: [number, number][]
  color: string
  dashed?: boolean
  step?: boolean
}

export const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

function niceMax(v: number): number {
  if (!(v > 0)) return 1
  const p = 10 ** Math.floor(Math.log10(v))
  for (const m of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p
  return 10 * p
}

const W = 760
const H = 260
const PAD = { l: 56, r: 16, t: 16, b: 36 }

function frame(
  xMax: number,
  yMax: number,
  xLabel: string,
  yLabel: string,
): { svg: string[]; x: (v: number) => number; y: (v: number) => number } {
  const x = (v: number) => PAD.l + (v / xMax) * (W - PAD.l - PAD.r)
  const y = (v: number) => H - PAD.b - (v / yMax) * (H - PAD.t - PAD.b)
  const svg: string[] = []
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4
    svg.push(`<line x1="${PAD.l}" x2="${W - PAD.r}" y1="${y(v)}" y2="${y(v)}" stroke="#e3e3e3"/>`)
    svg.push(`<text x="${PAD.l - 6}" y="${y(v) + 4}" text-anchor="end">${+v.toFixed(1)}</text>`)
  }
  for (let i = 0; i <= 5; i++) {
    const v = (xMax * i) / 5
    svg.push(`<text x="${x(v)}" y="${H - PAD.b + 16}" text-anchor="middle">${+v.toFixed(1)}</text>`)
  }
  svg.push(`<line x1="${PAD.l}" x2="${W - PAD.r}" y1="${y(0)}" y2="${y(0)}" stroke="#888"/>`)
  svg.push(`<text x="${(W + PAD.l) / 2}" y="${H - 4}" text-anchor="middle">${esc(xLabel)}</text>`)
  svg.push(`<text x="12" y="${PAD.t + 4}" transform="rotate(-90 12 ${PAD.t + 4})" text-anchor="end">${esc(yLabel)}</text>`)
  return { svg, x, y }
}

function legend(series: { name: string; color: string; dashed?: boolean }[]): string {
  return `<div class="legend">${series
    .map((s) => `<span><i style="border-top:3px ${s.dashed ? 'dashed' : 'solid'} ${s.color}"></i>${esc(s.name)}</span>`)
    .join('')}</div>`
}

export function lineChart(title: string, series: Series[], xLabel: string, yLabel: string, xMaxHint?: number): string {
  const all = series.flatMap((s) => s.points)
  const xMax = niceMax(xMaxHint ?? all.reduce((m, p) => Math.max(m, p[0]), 0))
  const yMax = niceMax(all.reduce((m, p) => Math.max(m, p[1]), 0) * 1.05)
  const { svg, x, y } = frame(xMax, yMax, xLabel, yLabel)
  for (const s of series) {
    if (s.points.length === 0) continue
    const pts: string[] = []
    let prev: [number, number] | undefined
    for (const p of s.points) {
      if (p[0] > xMax) break
      if (s.step && prev) pts.push(`${x(p[0]).toFixed(1)},${y(prev[1]).toFixed(1)}`)
      pts.push(`${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`)
      prev = p
    }
    svg.push(
      `<polyline fill="none" stroke="${s.color}" stroke-width="2" ${s.dashed ? 'stroke-dasharray="6 4"' : ''} points="${pts.join(' ')}"/>`,
    )
  }
  return `<figure><figcaption>${esc(title)}</figcaption><svg viewBox="0 0 ${W} ${H}" role="img">${svg.join('')}</svg>${legend(series)}</figure>`
}

export function barChart(
  title: string,
  bars: { x: number; v: number }[],
  lines: Series[],
  xLabel: string,
  yLabel: string,
  barName: string,
  xMax: number,
): string {
  const yMax = niceMax(Math.max(...bars.map((b) => b.v), ...lines.flatMap((s) => s.points.map((p) => p[1])), 1) * 1.05)
  const xm = niceMax(xMax)
  const { svg, x, y } = frame(xm, yMax, xLabel, yLabel)
  const bw = Math.max(1, x(1) - x(0) - 1)
  for (const b of bars) svg.push(`<rect x="${x(b.x) + 0.5}" y="${y(b.v)}" width="${bw}" height="${y(0) - y(b.v)}" fill="#7aa6d6"/>`)
  for (const s of lines) {
    const pts = s.points.filter((p) => p[0] <= xm).map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`)
    svg.push(
      `<polyline fill="none" stroke="${s.color}" stroke-width="2" ${s.dashed ? 'stroke-dasharray="6 4"' : ''} points="${pts.join(' ')}"/>`,
    )
  }
  return `<figure><figcaption>${esc(title)}</figcaption><svg viewBox="0 0 ${W} ${H}" role="img">${svg.join('')}</svg>${legend([
    { name: barName, color: '#7aa6d6' },
    ...lines,
  ])}</figure>`
}

export function boxChart(
  title: string,
  boxes: { x: number; min: number; q1: number; med: number; q3: number; max: number; n: number }[],
  lines: Series[],
  xMax: number,
): string {
  const yMax = niceMax(Math.max(1, ...boxes.map((b) => b.max), ...lines.flatMap((s) => s.points.map((p) => p[1]))) * 1.05)
  const xm = niceMax(xMax)
  const { svg, x, y } = frame(xm, yMax, 'arrival minute (sale time)', 'wait, sale minutes')
  const bw = Math.max(2, (x(1) - x(0)) * 0.6)
  for (const b of boxes) {
    const cx = x(b.x + 0.5)
    svg.push(`<line x1="${cx}" x2="${cx}" y1="${y(b.min)}" y2="${y(b.max)}" stroke="#555"/>`)
    svg.push(
      `<rect x="${cx - bw / 2}" y="${y(b.q3)}" width="${bw}" height="${Math.max(1, y(b.q1) - y(b.q3))}" fill="#b9d3ee" stroke="#555"><title>${b.n} visitors</title></rect>`,
    )
    svg.push(`<line x1="${cx - bw / 2}" x2="${cx + bw / 2}" y1="${y(b.med)}" y2="${y(b.med)}" stroke="#c0392b" stroke-width="2"/>`)
  }
  for (const s of lines) {
    const pts = s.points.filter((p) => p[0] <= xm).map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`)
    svg.push(
      `<polyline fill="none" stroke="${s.color}" stroke-width="2" ${s.dashed ? 'stroke-dasharray="6 4"' : ''} points="${pts.join(' ')}"/>`,
    )
  }
  return `<figure><figcaption>${esc(title)}</figcaption><svg viewBox="0 0 ${W} ${H}" role="img">${svg.join('')}</svg>${legend([
    { name: 'min-max, quartiles, median (red)', color: '#555' },
    ...lines,
  ])}</figure>`
}
