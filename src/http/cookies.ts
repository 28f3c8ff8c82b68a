// Cookie reading and writing for the edge's own cookies. Parsing never throws: a malformed
// header yields nothing, and the visitor gets a fresh place in line.

const MAX_COOKIE_HEADER = 8192

/**
 * Whether a cookie value is one the edge could have set, [A-Za-z0-9._~-]*: never anything a header
 * could smuggle. Checked by hand: a poll reads a token of some 90 characters this way.
 */
function isCookieValue(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i)
    const ok =
      (c >= 0x61 && c <= 0x7a) ||
      (c >= 0x41 && c <= 0x5a) ||
      (c >= 0x30 && c <= 0x39) ||
      c === 0x2e ||
      c === 0x5f ||
      c === 0x7e ||
      c === 0x2d
    if (!ok) return false
  }
  return true
}

/**
 * The value of the first cookie called `name`: as splitting the header on ";" and trimming each part
 * would read it, without making the parts (every poll reads one or two of the edge's cookies).
 */
export function readCookie(header: string | null, name: string): string | undefined {
  if (header === null || header.length > MAX_COOKIE_HEADER) return undefined
  const prefix = `${name}=`
  for (let at = header.indexOf(prefix); at >= 0; at = header.indexOf(prefix, at + 1)) {
    // A part begins at the start of the header or after a ";", past whitespace that trimming drops.
    let k = at - 1
    while (k >= 0 && (header[k] as string).trim() === '') k--
    if (k >= 0 && header.charCodeAt(k) !== 0x3b) continue
    const end = header.indexOf(';', at)
    const value = header.slice(at + prefix.length, end < 0 ? header.length : end).trimEnd()
    return isCookieValue(value) ? value : undefined
  }
  return undefined
}

/**
 * Removes every cookie whose name starts with `prefix` as any origin may read it: in any case, and
 * with the dots, spaces, brackets and dashes that PHP turns into `_`. Returns null when none is left.
 */
export function withoutCookies(header: string | null, prefix: string): string | null {
  if (header === null) return null
  const kept = header
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p.length > 0 && !cookieName(p).startsWith(prefix))
  return kept.length === 0 ? null : kept.join('; ')
}

function cookieName(pair: string): string {
  const eq = pair.indexOf('=')
  return (eq < 0 ? pair : pair.slice(0, eq))
    .trim()
    .toLowerCase()
    .replace(/[ .[-]/g, '_')
}

export interface CookieOptions {
  maxAgeSeconds: number
  secure: boolean
}

export function serializeCookie(name: string, value: string, o: CookieOptions): string {
  return `${name}=${value}; Path=/; Max-Age=${Math.max(0, Math.floor(o.maxAgeSeconds))}; HttpOnly; SameSite=Lax${o.secure ? '; Secure' : ''}`
}

export const COOKIE_PREFIX = 'anteroom_'
export const queueCookieName = (room: string) => `${COOKIE_PREFIX}q_${room}`
export const admissionCookieName = (room: string) => `${COOKIE_PREFIX}a_${room}`
/** Set by the queue page's script: this browser polls by itself, so no Refresh header is needed. */
export const JS_COOKIE = `${COOKIE_PREFIX}js`
