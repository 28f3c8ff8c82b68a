// Anteroom admin UI: plain modern JavaScript, no framework, no build step, no dependencies.
// Served under a CSP of script-src 'self' and style-src 'self': no inline scripts or style
// attributes; styles come from style.css classes (and CSSOM properties, which the CSP allows).
// Sign-in holds an HttpOnly session cookie; every change sends the CSRF token from /api/session.
//
// index.html loads this module; it wires the page's buttons and forms and starts. The rest, each an
// ES module of admin/ui/ served by the edge (and bundled for the Worker by worker/bundled.ts):
//   common.js    constants, the page's state, small helpers, the API call, the sign-in screen
//   signin.js    signing in and out
//   polling.js   the refresh loop: stats, history, rooms, audit log
//   rooms.js     the list of rooms, opening one
//   views.js     the tabs: Live, and report.js, access.js, bypass.js, page.js
//   live.js      the live numbers and the chart
//   settings.js  the settings form, saving it
//   schedule.js  a scheduled sale's times in the form
//   conflict.js  a save refused because someone else changed the room first (412)
//   actions.js   pause, resume, close, end all sessions; the confirm dialog
//   audit.js     the audit log
// They import each other's functions, in cycles too: that is safe as long as nothing but a function
// declaration is used while the modules load (views.js builds its views then, from such functions and
// common.js's helpers; common.js imports nothing, so it has always loaded first).

import { roomAction } from './actions.js'
import { $, api, background, FIELDS, showSignin, state } from './common.js'
import { resolveConflict, reviewStale } from './conflict.js'
import { renderChart } from './live.js'
import { refreshStats } from './polling.js'
import { controls, isSchedule, renderZones, SCHEDULE_PARTS } from './schedule.js'
import { renderHints, revert, save } from './settings.js'
import { signedIn, signIn, signOut } from './signin.js'
import { showView } from './views.js'

function bind() {
  $('signin-form').addEventListener('submit', signIn)
  $('token').addEventListener('input', () => $('token').removeAttribute('aria-invalid'))
  $('signout').addEventListener('click', () => background(signOut()))
  $('settings').addEventListener('submit', save)
  $('revert').addEventListener('click', revert)
  $('pause').addEventListener('click', () => background(roomAction('pause')))
  $('resume').addEventListener('click', () => background(roomAction('resume')))
  $('close').addEventListener('click', () => background(roomAction('close')))
  $('endall').addEventListener('click', () => background(roomAction('end-all')))
  $('conflict-merge').addEventListener('click', () => resolveConflict(true))
  $('conflict-theirs').addEventListener('click', () => resolveConflict(false))
  $('stale-load').addEventListener('click', () => background(reviewStale()))
  $('view-live').addEventListener('click', () => showView('live'))
  $('view-report').addEventListener('click', () => showView('report'))
  $('view-access').addEventListener('click', () => showView('access'))
  $('view-bypass').addEventListener('click', () => showView('bypass'))
  $('view-page').addEventListener('click', () => showView('page'))
  // The fields come later, from the schema: one listener on the form serves them all.
  $('settings').addEventListener('input', (event) => {
    // A schedule's boxes are named "schedule.opensAt". Its rules tie the times together, so typing
    // in one box clears the errors of all three.
    const f = String(event.target.name).split('.')[0]
    if (!FIELDS.includes(f)) return
    $(`err-${f}`).textContent = ''
    if (isSchedule(f)) for (const p of SCHEDULE_PARTS) $(`err-${f}-${p.key}`).textContent = ''
    for (const c of controls(f)) c.removeAttribute('aria-invalid')
    renderHints()
    if (isSchedule(f)) renderZones(f)
  })
  new ResizeObserver(() => renderChart()).observe($('chart-box'))
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && state.who !== null) background(refreshStats())
  })
}

async function boot() {
  bind()
  try {
    const r = await api('GET', '/session')
    if (r.ok) await signedIn(r.data)
    else showSignin()
  } catch {
    showSignin('The edge did not answer. Reload the page to try again.')
  }
}

void boot()
