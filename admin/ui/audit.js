// Anteroom admin UI: the audit log's table, each entry said in words.

import { describeAccess } from './access.js'
import { describeBypass } from './bypass.js'
import { $, clockTime, FIELDS, fmt, h, LABELS, same, schema, state, valueText } from './common.js'
import { describePage } from './page.js'

export function renderAudit() {
  const rows = state.audit.map((e) => {
    const t = Date.parse(e.at)
    return h(
      'tr',
      {},
      h('td', { class: 'nowrap' }, h('time', { datetime: e.at, title: new Date(t).toString() }, clockTime(t, true))),
      h('td', {}, e.who),
      h('td', {}, e.room ?? '–'),
      h('td', {}, describe(e)),
    )
  })
  if (rows.length === 0) rows.push(h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'No changes yet.')))
  $('audit-rows').replaceChildren(...rows)
}

const quoted = (f, v) => (schema.byName[f]?.type === 'text' ? `“${valueText(f, v)}”` : valueText(f, v))

function describe(e) {
  switch (e.action) {
    case 'room.pause':
      return 'Paused the room'
    case 'room.resume':
      return 'Resumed the room'
    case 'room.close':
      return 'Closed the room'
    case 'sessions.end-all':
      return `Ended all sessions (${fmt(e.after?.ended)})`
    case 'session.end':
      return 'Ended one session'
    case 'sessions.end':
      return `Ended ${fmt(e.after?.ended)} of ${fmt(e.before?.visitors?.length)} listed sessions`
    case 'settings.update': {
      const b = e.before ?? {}
      const a = e.after ?? {}
      const parts = FIELDS.filter((f) => !same(a[f], b[f])).map((f) => `${LABELS[f]} ${quoted(f, b[f])} → ${quoted(f, a[f])}`)
      return parts.length ? parts.join('; ') : 'Saved without changes'
    }
    default:
      return describeAccess(e) ?? describeBypass(e) ?? describePage(e) ?? e.action
  }
}
