// Anteroom admin UI: the room's views and the tabs between them: Live (numbers, chart, settings),
// Report (report.js), Access (access.js), Bypass & checks (bypass.js) and Page (page.js). Those
// modules draw their view with the helpers handed in here.

import { createAccessView } from './access.js'
import { confirmDialog } from './actions.js'
import { createBypassView } from './bypass.js'
import { $, api, background, clockTime, enc, fmt, h, state, svg } from './common.js'
import { niceMax, renderChart } from './live.js'
import { createPageView } from './page.js'
import { refreshAudit, refreshRooms } from './polling.js'
import { createReportView } from './report.js'
import { dirtyFields, loadSettings } from './settings.js'

/** The report view (report.js), drawn with this page's helpers; its range ends at the server's time. */
export const report = createReportView({ api, h, svg, fmt, clockTime, niceMax, serverNow: () => state.stats?.at ?? Date.now() })
/** The access view (access.js): a room's codes and invite links; a change shows in the audit log. */
export const access = createAccessView({
  api,
  h,
  fmt,
  confirmDialog,
  serverNow: () => state.stats?.at ?? Date.now(),
  changed: () => background(Promise.all([refreshAudit(), refreshRooms()])),
})

/** The Bypass & checks view (bypass.js): a room's bypass rules and human check; a change shows in the audit log. */
export const bypass = createBypassView({ api, h, fmt, confirmDialog, changed: () => background(ownChange()) })

/** A change this page made in another view (a rule, the human check): the form takes it as its own, not as someone else's. */
async function ownChange() {
  const room = state.roomId
  const r = await api('GET', `/rooms/${enc(room)}`)
  if (r.ok && room === state.roomId && !state.saving && state.conflict === null && dirtyFields().length === 0)
    loadSettings(r.data.settings, r.data.etag)
  await Promise.all([refreshAudit(), refreshRooms()])
}

/**
 * The Page view (page.js): the room's language and template, the templates, their editor and previews.
 * A change of the room's settings there is this admin's own: the settings form takes it as it is.
 */
export const pageView = createPageView({
  api,
  h,
  confirmDialog,
  changed: (room) => {
    if (room !== undefined && room.settings.id === state.roomId && dirtyFields().length === 0) loadSettings(room.settings, room.etag)
    background(Promise.all([refreshAudit(), refreshRooms()]))
  },
})

export function showView(name) {
  state.view = name
  $('view-live').setAttribute('aria-selected', String(name === 'live'))
  $('view-report').setAttribute('aria-selected', String(name === 'report'))
  $('view-access').setAttribute('aria-selected', String(name === 'access'))
  $('view-bypass').setAttribute('aria-selected', String(name === 'bypass'))
  $('view-page').setAttribute('aria-selected', String(name === 'page'))
  for (const part of document.querySelectorAll('#room > .stats, #room > .grid')) part.hidden = name !== 'live'
  if (name === 'access') access.show(state.roomId)
  else access.hide()
  if (name === 'bypass') bypass.show(state.roomId)
  else bypass.hide()
  if (name === 'page') pageView.show(state.roomId)
  else pageView.hide()
  if (name === 'report') report.show(state.roomId)
  else {
    report.hide()
    if (name === 'live') renderChart()
  }
}
