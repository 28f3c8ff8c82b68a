// Cookie reading and writing for the edge's own cookies. Parsing never throws: a malformed
// header yields nothing, and the visitor gets a fresh place in line.

const MAX_COOKIE_HEADER = 8192

export function readCookie(header: string | null, name: string): string | undefined {
  if (header === null || header.length > MAX_COOKIE_HEADER) return undefined
  const prefix = `${name}=`
  // Most requests lack most of the edge's cookies: one scan says so without splitting the header.
  if (!header.includes(prefix)) return undefined
  for (const part of header.split(';')) {
    const item = part.trim()
    if (item.startsWith(prefix)) {
      const value = item.slice(prefix.length)
      return /^[A-Za-z0-9._~-]*$/.test(value) ? value : undefined
    }
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
