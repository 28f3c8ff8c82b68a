// Anteroom admin UI: the Live view's numbers (line, sessions, admissions, bot defence, stock) and its
// chart of the last 30 minutes: SVG drawn here, with the admins' changes to the room as markers.

import { $, clockTime, duration, fmt, h, MODE_NAMES, same, state, svg, WINDOW_MS } from './common.js'
import { renderSchedules } from './schedule.js'

/** A gap this long between points breaks the line instead of drawing across it. */
const GAP_MS = 45_000

const SERIES = [
  { key: 'waiting', label: 'Waiting', cls: 'waiting' },
  { key: 'active', label: 'Active', cls: 'active' },
  { key: 'admittedLastMinute', label: 'Admitted / min', cls: 'admitted' },
]

export function renderModeBadge(mode) {
  const badge = $('mode-badge')
  badge.textContent = MODE_NAMES[mode] ?? mode
  badge.className = `badge mode-${mode}`
  $('pause').disabled = mode === 'paused'
  $('resume').disabled = mode === 'fifo'
  $('close').disabled = mode === 'closed'
}

export function renderStats() {
  const s = state.stats
  $('stat-waiting').textContent = fmt(s.waiting)
  $('stat-active').textContent = fmt(s.active)
  $('stat-admitted').textContent = fmt(s.admittedLastMinute)
  $('stat-eta').textContent = s.waiting > 0 && s.etaBackOfLineSeconds === null ? 'unknown' : duration(s.etaBackOfLineSeconds)
  $('stat-abandoned').textContent = fmt(s.abandonedLastMinute)
  renderDefence(s.botDefence)
  renderStock(s.stock)
  renderSchedules()
  $('stat-store').textContent = 'Up'
  $('stat-store').className = 'stat-value up'
  $('note-store').textContent = `as of ${clockTime(s.at, true)}`
  const limit = state.loaded
  $('note-admitted').textContent = limit ? `limit ${fmt(limit.newUsersPerMinute)} / min` : 'last 60 seconds'
  $('note-active').textContent = limit ? `of at most ${fmt(limit.totalActiveUsers)}` : 'sessions on the site'
  renderModeBadge(s.mode)
  const item = document.querySelector(`.room-button[aria-current="true"] .badge`)
  if (item) {
    item.textContent = MODE_NAMES[s.mode] ?? s.mode
    item.className = `badge mode-${s.mode}`
  }
}

/** The bot defence panel: proof of work ("off" at 0, or where the edge has no such setting), the network cap, refusals by reason. */
export function renderDefence(d) {
  const show = (id, text, off = false) => {
    $(id).textContent = text
    $(id).className = off ? 'off' : ''
  }
  if (!d) {
    for (const id of ['def-pow', 'def-cap', 'def-refused-network', 'def-refused-pow']) show(id, '–', true)
    return
  }
  const pow = d.powDifficulty ?? 0
  show('def-pow', pow > 0 ? `difficulty ${fmt(pow)}` : 'off', pow === 0)
  const cap = d.joinsPerNetworkPerMinute ?? 0
  show('def-cap', cap > 0 ? `${fmt(cap)} / min (IPv4 /${d.networkPrefixIPv4}, IPv6 /${d.networkPrefixIPv6})` : 'off', cap === 0)
  for (const reason of ['network', 'pow']) {
    const total = d.refused?.total?.[reason] ?? 0
    const recent = d.refused?.lastMinute?.[reason] ?? 0
    show(`def-refused-${reason}`, `${fmt(total)} (${fmt(recent)} last min)`)
  }
}

const STOCK_STATES = {
  available: ['Available', 'Something is free: the line moves as usual.'],
  all_held: [
    'Everything is held',
    'Nothing is free, some is held: nobody new is let in until a hold runs out or is released. The line keeps its places; newcomers still join it.',
  ],
  sold_out: [
    'Sold out',
    'Everything is sold: nobody new is let in. The line keeps its places; newcomers get the sold-out page without one.',
  ],
  unknown: ['Counts unknown', 'The origin has published no stock for this event (or the store did not answer): the line moves as usual.'],
}

/** The linked event's stock, as the edge saw it at its last look (once a second); null: not linked. */
function renderStock(stock) {
  const badge = $('stock-badge')
  const line = $('stock-state')
  const stops = stock?.stopsAdmissions === true
  badge.hidden = !stops
  if (stops) {
    badge.textContent = STOCK_STATES[stock.state]?.[0] ?? stock.state
    badge.className = `badge stock-${stock.state}`
  }
  if (stock === null || stock === undefined) {
    $('stock-event').textContent = 'no event'
    line.textContent = 'Not linked to an event: set Event in the settings to stop admissions when it has sold out.'
    line.setAttribute('data-state', 'none')
    $('stock-counts').hidden = true
    return
  }
  const [title, text] = STOCK_STATES[stock.state] ?? [stock.state, '']
  $('stock-event').textContent = `event ${stock.event}${stock.seenAt ? `, looked at ${clockTime(stock.seenAt, true)}` : ''}`
  line.replaceChildren(h('strong', {}, `${title}.`), ` ${text}`)
  line.setAttribute('data-state', stock.state)
  $('stock-counts').hidden = stock.free === null
  $('stock-free').textContent = fmt(stock.free)
  $('stock-held').textContent = fmt(stock.held)
  $('stock-sold').textContent = fmt(stock.sold)
  $('stock-reconciled').textContent = stock.reconciledAt ? clockTime(stock.reconciledAt, true) : '–'
}

export function renderStoreDown(body) {
  $('stat-store').textContent = 'Down'
  $('stat-store').className = 'stat-value down'
  $('note-store').textContent = 'numbers are stale'
  renderModeBadge(body.mode)
  renderStock(body.stock)
}

/** 0, then a round number at or above the largest value: 1, 2, 2.5 or 5 times a power of ten. */
export function niceMax(v) {
  if (v <= 4) return 4
  const p = 10 ** Math.floor(Math.log10(v))
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p
  return 10 * p
}

function auditMarker(entry) {
  const a = entry.after ?? {}
  const b = entry.before ?? {}
  switch (entry.action) {
    case 'room.pause':
      return 'paused'
    case 'room.resume':
      return 'resumed'
    case 'room.close':
      return 'closed'
    case 'sessions.end-all':
      return 'ended all'
    case 'settings.update':
      if (a.newUsersPerMinute !== b.newUsersPerMinute) return `${fmt(a.newUsersPerMinute)}/min`
      if (a.totalActiveUsers !== b.totalActiveUsers) return `max ${fmt(a.totalActiveUsers)}`
      if (a.mode !== b.mode) return MODE_NAMES[a.mode] ?? a.mode
      if (!same(a.schedule, b.schedule)) return a.schedule ? 'schedule' : 'no schedule'
      return 'settings'
    default:
      return null
  }
}

export function renderChart() {
  const box = $('chart-box')
  const chart = $('chart')
  const width = Math.max(240, Math.floor(box.clientWidth))
  const height = Math.max(180, Math.floor(box.clientHeight))
  const last = state.samples.at(-1)?.t ?? Number.NEGATIVE_INFINITY
  const points = [...state.samples, ...state.live.filter((p) => p.t > last)]
  const end = Math.max(points.at(-1)?.t ?? 0, state.stats?.at ?? 0)
  chart.setAttribute('viewBox', `0 0 ${width} ${height}`)
  chart.setAttribute('width', String(width))
  chart.setAttribute('height', String(height))
  const desc = svg('desc', { id: 'chart-desc' })
  const nodes = [desc]
  if (end === 0) {
    desc.textContent = 'No data yet'
    nodes.push(
      svg('text', { x: width / 2, y: height / 2, class: 'chart-empty', 'text-anchor': 'middle' }, 'Waiting for the first numbers…'),
    )
    chart.replaceChildren(...nodes)
    return
  }
  const start = end - WINDOW_MS
  const shown = points.filter((p) => p.t >= start)
  const m = { l: 52, r: 14, t: 22, b: 24 }
  const gap = 24
  const plotW = width - m.l - m.r
  const panelH = (height - m.t - m.b - gap * (SERIES.length - 1)) / SERIES.length
  const x = (t) => m.l + ((t - start) / WINDOW_MS) * plotW

  // Time grid, every 5 minutes of the server's clock.
  for (let t = Math.ceil(start / 300_000) * 300_000; t <= end; t += 300_000) {
    nodes.push(svg('line', { x1: x(t), x2: x(t), y1: m.t, y2: height - m.b, class: 'grid-v' }))
    nodes.push(svg('text', { x: x(t), y: height - 6, class: 'axis', 'text-anchor': 'middle' }, clockTime(t)))
  }

  const summary = []
  SERIES.forEach((series, i) => {
    const top = m.t + i * (panelH + gap)
    const bottom = top + panelH
    const values = shown.map((p) => p[series.key]).filter((v) => typeof v === 'number')
    const max = niceMax(Math.max(0, ...values))
    const y = (v) => bottom - (v / max) * panelH
    nodes.push(svg('line', { x1: m.l, x2: width - m.r, y1: bottom, y2: bottom, class: 'grid-base' }))
    nodes.push(svg('line', { x1: m.l, x2: width - m.r, y1: top, y2: top, class: 'grid-h' }))
    nodes.push(svg('line', { x1: m.l, x2: width - m.r, y1: (top + bottom) / 2, y2: (top + bottom) / 2, class: 'grid-h' }))
    nodes.push(svg('text', { x: m.l - 6, y: top + 4, class: 'axis', 'text-anchor': 'end' }, fmt(max)))
    nodes.push(svg('text', { x: m.l - 6, y: bottom, class: 'axis', 'text-anchor': 'end' }, '0'))
    // Lines, broken where there is no data for a while; a light area under each stretch.
    let line = ''
    let area = ''
    let run = []
    const flush = () => {
      if (run.length === 0) return
      const d = run.map((p, k) => `${k === 0 ? 'M' : 'L'}${x(p.t).toFixed(1)} ${y(p[series.key]).toFixed(1)}`).join(' ')
      line += `${d} `
      area += `${d} L${x(run.at(-1).t).toFixed(1)} ${bottom} L${x(run[0].t).toFixed(1)} ${bottom} Z `
      run = []
    }
    let prev = null
    for (const p of shown) {
      if (typeof p[series.key] !== 'number') continue
      if (prev && p.t - prev.t > GAP_MS) flush()
      run.push(p)
      prev = p
    }
    flush()
    nodes.push(svg('path', { d: area.trim() || 'M0 0', class: `area s-${series.cls}` }))
    nodes.push(
      svg('path', { d: line.trim() || 'M0 0', class: `line s-${series.cls}`, 'data-series': series.key, 'data-points': values.length }),
    )
    const lastPoint = shown.filter((p) => typeof p[series.key] === 'number').at(-1)
    if (lastPoint) {
      nodes.push(svg('circle', { cx: x(lastPoint.t), cy: y(lastPoint[series.key]), r: 3.5, class: `dot s-${series.cls}` }))
      summary.push(`${series.label} ${fmt(lastPoint[series.key])} (peak ${fmt(Math.max(...values))})`)
    }
    nodes.push(svg('text', { x: m.l + 6, y: top + 13, class: `panel-label t-${series.cls}` }, series.label))
  })

  // Admin changes to this room, as dashed markers. Changes close together share one label, the
  // newest, with a count of the others.
  const groups = []
  for (const entry of [...state.audit].reverse()) {
    const t = Date.parse(entry.at)
    if (entry.room !== state.roomId || !(t >= start && t <= end)) continue
    const label = auditMarker(entry)
    if (label === null) continue
    const mx = x(t)
    nodes.push(svg('line', { x1: mx, x2: mx, y1: m.t - 4, y2: height - m.b, class: 'marker' }))
    const group = groups.at(-1)
    if (group && mx - group.x < 40) {
      group.x = mx
      group.label = label
      group.count++
    } else groups.push({ x: mx, label, count: 1 })
  }
  // Labels from the newest back: right of their line if there is room, else left; never overlapping.
  let limit = width - m.r
  for (const g of groups.reverse()) {
    const text = g.count > 1 ? `${g.label} +${g.count - 1}` : g.label
    const w = text.length * 6.5
    let left = g.x + 4
    if (left + w > limit) left = g.x - 4 - w
    if (left < 0 || left + w > limit) continue
    nodes.push(svg('text', { x: left, y: m.t - 8, class: 'marker-label' }, text))
    limit = left - 8
  }

  desc.textContent = `Last 30 minutes, ${shown.length} points. Now: ${summary.join('; ')}.`
  chart.replaceChildren(...nodes)
}
