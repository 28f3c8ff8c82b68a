// Anteroom admin UI: the Report view of a room, from GET /api/rooms/:id/report (the minutes the
// analytics keep, 30 days): the summary numbers, the line and the admissions per minute with the
// sold-out minute marked, the time-in-queue distribution with its percentiles, and the JSON and CSV
// to download. views.js imports it and hands in its helpers; charts are SVG drawn here (the page's CSP
// allows no inline script or style: everything is styled by style.css classes).

const MINUTE_MS = 60_000
/** The ranges offered, ending now on the server's clock (the live stats' time). */
const RANGES = [
  { key: '1h', label: 'Last hour', ms: 3_600_000 },
  { key: '6h', label: 'Last 6 hours', ms: 6 * 3_600_000 },
  { key: '24h', label: 'Last 24 hours', ms: 24 * 3_600_000 },
  { key: '7d', label: 'Last 7 days', ms: 7 * 24 * 3_600_000 },
  { key: '30d', label: 'Last 30 days', ms: 30 * 24 * 3_600_000 },
]
const DEFAULT_RANGE = '24h'

/** A bucket bound or a wait, seconds, short: 45 s, 5 min, 1.5 h. */
export function waitText(seconds) {
  if (seconds < 60) return `${seconds} s`
  if (seconds < 3600) return `${+(seconds / 60).toFixed(1)} min`
  return `${+(seconds / 3600).toFixed(1)} h`
}

/** A percentile of the report ({le} or {gt}, null for none): "≤ 5 min", "> 24 h", "–". */
export function percentileText(p) {
  if (p === null || p === undefined) return '–'
  return 'le' in p ? `≤ ${waitText(p.le)}` : `> ${waitText(p.gt)}`
}

/**
 * The Report view. `ui` is what views.js lends it: api(method, path), h(tag, attrs, ...children),
 * svg(tag, attrs, text), fmt(n), clockTime(ms), niceMax(v), and serverNow(), the server's time (ms).
 */
export function createReportView(ui) {
  const { api, h, svg, fmt, clockTime, niceMax } = ui
  const view = { room: null, range: DEFAULT_RANGE, report: null, loading: 0, el: null }
  const $ = (id) => document.getElementById(id)

  function build(root) {
    const select = h('select', { id: 'report-range', 'aria-label': 'Range' }, ...RANGES.map((r) => h('option', { value: r.key }, r.label)))
    select.value = view.range
    select.addEventListener('change', () => {
      view.range = select.value
      reload()
    })
    const refresh = h('button', { type: 'button', id: 'report-refresh', class: 'ghost' }, 'Refresh')
    refresh.addEventListener('click', reload)
    const tile = (id, label, note) =>
      h(
        'div',
        { class: 'stat' },
        h('span', { class: 'stat-label' }, label),
        h('span', { class: 'stat-value', id }, '–'),
        h('span', { class: 'stat-note', id: `${id}-note` }, note),
      )
    const chart = (id, title, legend) =>
      h(
        'section',
        { class: 'card report-chart-card', 'aria-labelledby': `${id}-heading` },
        h('div', { class: 'card-head' }, h('h2', { id: `${id}-heading` }, title), h('span', { class: 'muted small' }, legend)),
        h(
          'div',
          { class: 'report-chart-box', id: `${id}-box` },
          svg('svg', { id, role: 'img', 'aria-labelledby': `${id}-desc`, class: 'report-chart' }),
        ),
      )
    root.replaceChildren(
      h(
        'div',
        { class: 'report-head' },
        h('div', {}, h('h2', { class: 'report-title' }, 'Report'), h('p', { class: 'muted small', id: 'report-span' }, '')),
        h(
          'div',
          { class: 'report-tools' },
          select,
          refresh,
          h('a', { id: 'report-json', class: 'button-link', href: '#' }, 'Download JSON'),
          h('a', { id: 'report-csv', class: 'button-link', href: '#' }, 'Download CSV'),
        ),
      ),
      h('p', { id: 'report-status', class: 'report-status muted', role: 'status', 'aria-live': 'polite' }, ''),
      h(
        'section',
        { class: 'stats report-stats', 'aria-label': 'Report summary' },
        tile('report-admitted', 'Admitted', 'in the range'),
        tile('report-abandoned', 'Abandoned', 'stopped polling'),
        tile('report-refused', 'Refused joins', ''),
        tile('report-peak', 'Peak waiting', ''),
        tile('report-soldout', 'Sold out', ''),
        tile('report-p50', 'Time in queue p50', ''),
        tile('report-p90', 'p90', 'bucket upper bound'),
        tile('report-p99', 'p99', 'bucket upper bound'),
      ),
      h(
        'div',
        { class: 'report-grid' },
        chart('report-waiting', 'Waiting', 'in line at each minute'),
        chart('report-admissions', 'Admitted per minute', 'from the store’s running total'),
        chart('report-wait', 'Time in queue', 'admissions by wait, from arrival to admission'),
      ),
    )
    new ResizeObserver(() => render()).observe(root)
  }

  /** Loads the report; if the edge does not answer, the status line says so. */
  function reload() {
    load().catch(() => {
      $('report-status').textContent = 'The edge did not answer. Try again in a moment.'
    })
  }

  async function load() {
    const room = view.room
    if (room === null) return
    const id = ++view.loading
    const range = RANGES.find((r) => r.key === view.range) ?? RANGES[2]
    // To the minute after now: the current minute (which has begun) is in the range.
    const to = (Math.floor(ui.serverNow() / MINUTE_MS) + 1) * MINUTE_MS
    const from = to - range.ms
    const query = `from=${from}&to=${to}`
    const path = `/rooms/${encodeURIComponent(room)}/report?${query}`
    const stamp = new Date(from).toISOString().slice(0, 16).replace(/[-:]/g, '')
    const json = $('report-json')
    json.href = `/_anteroom/api${path}`
    json.setAttribute('download', `anteroom-${room}-${stamp}.json`)
    const csv = $('report-csv')
    csv.href = `/_anteroom/api${path}&format=csv`
    csv.setAttribute('download', `anteroom-${room}-${stamp}.csv`)
    $('report-status').textContent = 'Loading…'
    const r = await api('GET', path)
    if (id !== view.loading || room !== view.room) return
    if (!r.ok) {
      $('report-status').textContent = r.data?.error?.message ?? `The report could not be read (HTTP ${r.status}).`
      return
    }
    view.report = r.data
    render()
  }

  function renderSummary(rep) {
    const set = (id, value, note) => {
      $(id).textContent = value
      if (note !== undefined) $(`${id}-note`).textContent = note
    }
    const refused = Object.values(rep.refused).reduce((n, v) => n + v, 0)
    set('report-admitted', fmt(rep.admitted))
    set('report-abandoned', fmt(rep.abandoned))
    set('report-refused', fmt(refused), `network ${fmt(rep.refused.network)} · proof of work ${fmt(rep.refused.pow)}`)
    set(
      'report-peak',
      rep.peakWaiting === null ? '–' : fmt(rep.peakWaiting.waiting),
      rep.peakWaiting === null ? 'no samples' : `at ${clockTime(rep.peakWaiting.t)}`,
    )
    set(
      'report-soldout',
      rep.soldOutAt === null ? 'No' : clockTime(rep.soldOutAt),
      rep.soldOutAt === null ? 'stock never ran out' : 'first minute with nothing left',
    )
    const q = rep.timeInQueue
    set('report-p50', percentileText(q.p50), `${fmt(q.admissions)} admissions timed`)
    set('report-p90', percentileText(q.p90))
    set('report-p99', percentileText(q.p99))
    $('report-soldout').classList.toggle('sold', rep.soldOutAt !== null)
    const resets =
      rep.resets > 0 ? ` The store lost the room ${rep.resets === 1 ? 'once' : `${rep.resets} times`}: counting went on from 0.` : ''
    $('report-span').textContent =
      `${new Date(rep.from).toISOString().slice(0, 16).replace('T', ' ')} to ${new Date(rep.to).toISOString().slice(0, 16).replace('T', ' ')} UTC`
    $('report-status').textContent =
      rep.minutesCovered === 0
        ? 'No minutes were recorded in this range.'
        : `${fmt(rep.minutesCovered)} of ${fmt(rep.minutesInRange)} minutes recorded.${resets}`
  }

  /** The plot area of a chart box, and the SVG sized to it. */
  function frame(id) {
    const box = $(`${id}-box`)
    const el = $(id)
    const width = Math.max(240, Math.floor(box.clientWidth))
    const height = Math.max(150, Math.floor(box.clientHeight))
    el.setAttribute('viewBox', `0 0 ${width} ${height}`)
    el.setAttribute('width', String(width))
    el.setAttribute('height', String(height))
    return { el, width, height, m: { l: 52, r: 14, t: 24, b: 26 } }
  }

  /** Waiting (a line) or admissions (bars) over the range, binned to about 2 px a bin, the sold-out minute marked. */
  function timeChart(id, rep, kind) {
    const { el, width, height, m } = frame(id)
    const plotW = width - m.l - m.r
    const bottom = height - m.b
    const span = rep.to - rep.from
    const x = (t) => m.l + ((t - rep.from) / span) * plotW
    const binMs = MINUTE_MS * Math.max(1, Math.ceil((2 * (span / MINUTE_MS)) / plotW))
    const key = kind === 'line' ? 'waiting' : 'admitted'
    const bins = new Map()
    for (const row of rep.minutes) {
      const v = row[key]
      if (typeof v !== 'number') continue
      const b = Math.floor((row.t - rep.from) / binMs)
      // A line shows the longest wait of a bin; bars add a bin's admissions up.
      bins.set(b, kind === 'line' ? Math.max(bins.get(b) ?? 0, v) : (bins.get(b) ?? 0) + v)
    }
    const points = [...bins].sort((a, b) => a[0] - b[0])
    const max = niceMax(Math.max(0, ...points.map(([, v]) => v)))
    const y = (v) => bottom - (v / max) * (bottom - m.t)
    const desc = svg('desc', { id: `${id}-desc` })
    const nodes = [desc]
    nodes.push(svg('line', { x1: m.l, x2: width - m.r, y1: bottom, y2: bottom, class: 'grid-base' }))
    nodes.push(svg('line', { x1: m.l, x2: width - m.r, y1: m.t, y2: m.t, class: 'grid-h' }))
    nodes.push(svg('text', { x: m.l - 6, y: m.t + 4, class: 'axis', 'text-anchor': 'end' }, fmt(max)))
    nodes.push(svg('text', { x: m.l - 6, y: bottom, class: 'axis', 'text-anchor': 'end' }, '0'))
    for (let i = 0; i <= 4; i++) {
      const t = rep.from + (span * i) / 4
      nodes.push(
        svg('text', { x: x(t), y: height - 6, class: 'axis', 'text-anchor': i === 0 ? 'start' : i === 4 ? 'end' : 'middle' }, clockTime(t)),
      )
    }
    const total = points.reduce((n, [, v]) => n + v, 0)
    if (kind === 'line') {
      let d = ''
      let prev = null
      for (const [b, v] of points) {
        d += `${prev !== null && b === prev + 1 ? 'L' : 'M'}${x(rep.from + b * binMs).toFixed(1)} ${y(v).toFixed(1)} `
        prev = b
      }
      nodes.push(svg('path', { d: d.trim() || 'M0 0', class: 'line s-waiting', 'data-points': points.length }))
    } else {
      const w = Math.max(1, x(rep.from + binMs) - x(rep.from) - 1)
      const bars = svg('g', { class: 'bars s-admitted', 'data-bars': points.length, 'data-total': total })
      for (const [b, v] of points) {
        if (v <= 0) continue
        bars.append(
          svg('rect', {
            x: x(rep.from + b * binMs).toFixed(1),
            y: y(v).toFixed(1),
            width: w.toFixed(1),
            height: (bottom - y(v)).toFixed(1),
          }),
        )
      }
      nodes.push(bars)
    }
    if (rep.soldOutAt !== null) {
      const sx = x(rep.soldOutAt)
      nodes.push(svg('line', { x1: sx, x2: sx, y1: m.t - 6, y2: bottom, class: 'marker sold-out' }))
      const label = `Sold out ${clockTime(rep.soldOutAt)}`
      const left = sx + 4 + label.length * 6.5 > width - m.r ? sx - 4 - label.length * 6.5 : sx + 4
      nodes.push(svg('text', { x: left, y: m.t - 10, class: 'marker-label sold-out-label' }, label))
    }
    const peak = kind === 'line' ? rep.peakWaiting : null
    desc.textContent =
      points.length === 0
        ? 'No data in this range'
        : kind === 'line'
          ? `Waiting over the range: peak ${fmt(peak?.waiting)}${rep.soldOutAt === null ? '' : `; sold out at ${clockTime(rep.soldOutAt)}`}.`
          : `Admitted per ${binMs === MINUTE_MS ? 'minute' : `${binMs / MINUTE_MS} minutes`}: ${fmt(total)} in all.`
    el.replaceChildren(...nodes)
  }

  /** Admissions by time in queue, a bar a bucket, with p50, p90 and p99 over their buckets. */
  function waitChart(rep) {
    const { el, width, height, m } = frame('report-wait')
    const buckets = rep.timeInQueue.buckets
    const plotW = width - m.l - m.r
    const bottom = height - m.b
    const slot = plotW / Math.max(1, buckets.length)
    const max = niceMax(Math.max(0, ...buckets.map((b) => b.count)))
    const y = (v) => bottom - (v / max) * (bottom - m.t)
    const desc = svg('desc', { id: 'report-wait-desc' })
    const nodes = [desc]
    nodes.push(svg('line', { x1: m.l, x2: width - m.r, y1: bottom, y2: bottom, class: 'grid-base' }))
    nodes.push(svg('line', { x1: m.l, x2: width - m.r, y1: m.t, y2: m.t, class: 'grid-h' }))
    nodes.push(svg('text', { x: m.l - 6, y: m.t + 4, class: 'axis', 'text-anchor': 'end' }, fmt(max)))
    nodes.push(svg('text', { x: m.l - 6, y: bottom, class: 'axis', 'text-anchor': 'end' }, '0'))
    const q = rep.timeInQueue
    const marks = new Map()
    for (const [name, p] of [
      ['p50', q.p50],
      ['p90', q.p90],
      ['p99', q.p99],
    ]) {
      if (p === null) continue
      const i = 'le' in p ? buckets.findIndex((b) => b.le === p.le) : buckets.length - 1
      marks.set(i, [...(marks.get(i) ?? []), name])
    }
    const bars = svg('g', { class: 'bars s-wait', 'data-bars': buckets.length, 'data-total': q.admissions })
    const every = slot < 30 ? 2 : 1
    buckets.forEach((b, i) => {
      const bx = m.l + i * slot
      if (b.count > 0)
        bars.append(
          svg('rect', {
            x: (bx + 1).toFixed(1),
            y: y(b.count).toFixed(1),
            width: Math.max(1, slot - 2).toFixed(1),
            height: (bottom - y(b.count)).toFixed(1),
          }),
        )
      if (i % every === 0 || i === buckets.length - 1) {
        const label = b.le === null ? `>${waitText(buckets[i - 1]?.le ?? 0)}` : waitText(b.le)
        nodes.push(svg('text', { x: bx + slot / 2, y: height - 6, class: 'axis', 'text-anchor': 'middle' }, label.replace(' ', '')))
      }
      const names = marks.get(i)
      if (names !== undefined) {
        const top = b.count > 0 ? y(b.count) : bottom
        nodes.push(
          svg('text', { x: bx + slot / 2, y: top - 5, class: 'marker-label percentile-label', 'text-anchor': 'middle' }, names.join(' ')),
        )
      }
    })
    nodes.push(bars)
    desc.textContent =
      q.admissions === 0
        ? 'No admissions timed in this range'
        : `${fmt(q.admissions)} admissions by time in queue: p50 ${percentileText(q.p50)}, p90 ${percentileText(q.p90)}, p99 ${percentileText(q.p99)}.`
    el.replaceChildren(...nodes)
  }

  function render() {
    const rep = view.report
    if (rep === null || view.el === null || view.el.hidden) return
    renderSummary(rep)
    timeChart('report-waiting', rep, 'line')
    timeChart('report-admissions', rep, 'bars')
    waitChart(rep)
  }

  return {
    /** Shows the report of `room`, loading it (again). */
    show(room) {
      if (view.el === null) {
        view.el = $('report-view')
        build(view.el)
      }
      if (room !== view.room) view.report = null
      view.room = room
      view.el.hidden = false
      reload()
    },
    hide() {
      if (view.el !== null) view.el.hidden = true
    },
  }
}
