// Anteroom admin UI: signing in with an admin token (and an optional name), the wait the edge asks
// for after too many failed tries (429), what happens once signed in, and signing out.

import { $, api, BASE, background, errorMessage, signedOut, state } from './common.js'
import { refreshAudit, refreshRooms, startLoop } from './polling.js'
import { selectRoom } from './rooms.js'
import { loadSchema } from './settings.js'

/** While the edge refuses sign-ins (429), the button stays disabled until this time (ms). */
let signinLockedUntil = 0
let signinUnlockTimer = null

function lockSignin(seconds) {
  signinLockedUntil = Date.now() + seconds * 1000
  $('signin-button').disabled = true
  clearTimeout(signinUnlockTimer)
  signinUnlockTimer = setTimeout(() => {
    signinLockedUntil = 0
    $('signin-button').disabled = false
    const err = $('signin-error')
    err.textContent = 'You can try signing in again.'
    err.classList.add('info')
  }, seconds * 1000)
}

export async function signIn(event) {
  event.preventDefault()
  if (Date.now() < signinLockedUntil) return
  const input = $('token')
  const token = input.value.trim()
  const name = $('signin-name').value.trim()
  const err = $('signin-error')
  err.classList.remove('info')
  if (token === '') {
    err.textContent = 'Enter your admin token.'
    input.setAttribute('aria-invalid', 'true')
    input.focus()
    return
  }
  $('signin-button').disabled = true
  try {
    const res = await fetch(`${BASE}/admin/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(name === '' ? { token } : { name, token }),
      credentials: 'same-origin',
    })
    const data = await res.json().catch(() => null)
    if (!res.ok) {
      if (res.status === 429) {
        // Too many failed sign-ins from here (or for this name): the edge says how long to wait.
        const seconds = Number(res.headers.get('retry-after')) || data?.error?.retryAfterSeconds || 1
        err.textContent = errorMessage({ data, status: res.status }, `Too many failed sign-ins: try again in ${seconds} s`)
        lockSignin(seconds)
      } else if (res.status === 401) {
        err.textContent =
          name === ''
            ? 'That admin token is not valid. Check it and try again.'
            : 'That name and admin token do not match. Check them and try again.'
      } else {
        err.textContent = errorMessage({ data, status: res.status }, 'Sign-in failed')
      }
      input.setAttribute('aria-invalid', 'true')
      input.select()
      return
    }
    input.value = ''
    input.removeAttribute('aria-invalid')
    err.textContent = ''
    await signedIn(data)
  } catch {
    err.textContent = 'The edge did not answer. Check your connection and try again.'
  } finally {
    if (Date.now() >= signinLockedUntil) $('signin-button').disabled = false
  }
}

export async function signedIn(session) {
  state.who = session.who
  state.csrf = session.csrf
  $('who').textContent = session.who
  $('loading').hidden = true
  $('signin').hidden = true
  $('app').hidden = false
  await loadSchema()
  await refreshRooms()
  let wanted = ''
  try {
    wanted = decodeURIComponent(location.hash.replace(/^#room=/, ''))
  } catch {
    wanted = ''
  }
  const first = state.rooms.find((r) => r.settings.id === wanted) ?? state.rooms[0]
  if (first) await selectRoom(first.settings.id)
  else $('empty').hidden = false
  background(refreshAudit())
  startLoop()
}

export async function signOut() {
  const res = await api('POST', '/logout').catch(() => ({ status: 0 }))
  signedOut(
    res.status === 200
      ? 'You are signed out.'
      : 'Signed out in this browser. The edge could not end the session everywhere; it ends by itself within 8 hours.',
  )
}
