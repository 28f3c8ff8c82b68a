// Room settings: their shape, defaults and validation. Validation names the bad field.
import { AnteroomError } from './errors.js'
import { canonicalPath } from './path.js'

export const ROOM_MODES = ['fifo', 'paused', 'passthrough', 'closed'] as const
export type RoomMode = (typeof ROOM_MODES)[number]
export const STORE_ERROR_POLICIES = ['closed', 'open'] as const
export type StoreErrorPolicy = (typeof STORE_ERROR_POLICIES)[number]

export interface RoomSettings {
  /** Room id: lower-case letters, digits and dashes. It names the room's keys and cookies. */
  id: string
  /** Hosts this room protects (empty: any host). */
  hosts: string[]
  /** Path prefixes this room protects (empty: every path). */
  paths: string[]
  totalActiveUsers: number
  newUsersPerMinute: number
  sessionDurationSeconds: number
  refreshSeconds: number
  abandonAfterSeconds: number
  mode: RoomMode
  onStoreError: StoreErrorPolicy
  /** Queue page text. */
  title: string
  message: string
}

export const ROOM_ID = /^[a-z0-9][a-z0-9-]{0,31}$/

/** What the admission rules need of a room, in milliseconds. */
export interface AdmissionLimits {
  mode: 'fifo' | 'paused' | 'passthrough'
  totalActiveUsers: number
  newUsersPerMinute: number
  abandonAfterMs: number
  sessionMs: number
}

export function admissionLimits(room: RoomSettings): AdmissionLimits {
  return {
    mode: room.mode === 'closed' ? 'paused' : room.mode,
    totalActiveUsers: room.totalActiveUsers,
    newUsersPerMinute: room.newUsersPerMinute,
    abandonAfterMs: room.abandonAfterSeconds * 1000,
    sessionMs: room.sessionDurationSeconds * 1000,
  }
}

const LIMITS = {
  totalActiveUsers: [1, 10_000_000],
  newUsersPerMinute: [1, 6_000_000],
  sessionDurationSeconds: [10, 7 * 24 * 3600],
  refreshSeconds: [2, 600],
  abandonAfterSeconds: [5, 24 * 3600],
} as const

const KNOWN_FIELDS = new Set<string>(['id', 'hosts', 'paths', ...Object.keys(LIMITS), 'mode', 'onStoreError', 'title', 'message'])

function fail(field: string, message: string): never {
  throw new AnteroomError('ERR_SETTINGS_INVALID', `${field}: ${message}`, { field })
}

function int(input: Record<string, unknown>, key: keyof typeof LIMITS, where: string, fallback?: number): number {
  const value = input[key] ?? fallback
  const [min, max] = LIMITS[key]
  if (typeof value !== 'number' || !Number.isInteger(value)) fail(`${where}${key}`, 'must be a whole number')
  if (value < min || value > max) fail(`${where}${key}`, `must be between ${min} and ${max}, got ${value}`)
  return value
}

function strings(input: Record<string, unknown>, key: 'hosts' | 'paths', where: string): string[] {
  const value = input[key] ?? []
  if (!Array.isArray(value) || value.length > 64) fail(`${where}${key}`, 'must be a list of at most 64 strings')
  return value.map((item, i) => {
    if (typeof item !== 'string' || item.length === 0 || item.length > 255) {
      fail(`${where}${key}[${i}]`, 'must be a non-empty string of at most 255 characters')
    }
    if (key === 'paths' && !item.startsWith('/')) fail(`${where}${key}[${i}]`, 'must start with /')
    if (key === 'paths') {
      // Rooms are matched on canonical paths (core/path.ts), so a room's own path must be one.
      const canonical = canonicalPath(item)
      if (!canonical.ok) fail(`${where}${key}[${i}]`, `must be a plain path like /tickets: ${canonical.problem}`)
      if (canonical.path !== item) fail(`${where}${key}[${i}]`, `must be written in canonical form: ${canonical.path}`)
    }
    if (key === 'hosts' && !/^[a-z0-9.:-]+$/i.test(item)) fail(`${where}${key}[${i}]`, 'must be a host name')
    return key === 'hosts' ? item.toLowerCase().replace(/\.$/, '') : item
  })
}

function text(input: Record<string, unknown>, key: 'title' | 'message', where: string, fallback: string): string {
  const value = input[key] ?? fallback
  if (typeof value !== 'string' || value.length > 2000) fail(`${where}${key}`, 'must be a string of at most 2000 characters')
  return value
}

function oneOf<T extends string>(input: Record<string, unknown>, key: string, where: string, allowed: readonly T[], fallback: T): T {
  const value = input[key] ?? fallback
  if (typeof value !== 'string' || !allowed.includes(value as T)) fail(`${where}${key}`, `must be one of ${allowed.join(', ')}`)
  return value as T
}

/**
 * Checks one room's settings, fills in defaults and returns a frozen copy.
 * `where` prefixes field names in errors, e.g. "rooms[0].".
 */
export function parseRoomSettings(input: unknown, where = ''): RoomSettings {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) fail(where.replace(/\.$/, '') || 'room', 'must be an object')
  const raw = input as Record<string, unknown>
  for (const key of Object.keys(raw)) if (!KNOWN_FIELDS.has(key)) fail(`${where}${key}`, 'is not a known setting')
  if (typeof raw.id !== 'string' || !ROOM_ID.test(raw.id)) fail(`${where}id`, 'must be 1-32 lower-case letters, digits or dashes')
  const refreshSeconds = int(raw, 'refreshSeconds', where, 20)
  const settings: RoomSettings = {
    id: raw.id,
    hosts: strings(raw, 'hosts', where),
    paths: strings(raw, 'paths', where),
    totalActiveUsers: int(raw, 'totalActiveUsers', where),
    newUsersPerMinute: int(raw, 'newUsersPerMinute', where),
    sessionDurationSeconds: int(raw, 'sessionDurationSeconds', where, 600),
    refreshSeconds,
    abandonAfterSeconds: int(raw, 'abandonAfterSeconds', where, 3 * refreshSeconds),
    mode: oneOf(raw, 'mode', where, ROOM_MODES, 'fifo'),
    onStoreError: oneOf(raw, 'onStoreError', where, STORE_ERROR_POLICIES, 'closed'),
    title: text(raw, 'title', where, 'You are in line'),
    message: text(raw, 'message', where, 'Thanks for waiting. We let people in in the order they arrived.'),
  }
  if (settings.abandonAfterSeconds < settings.refreshSeconds * 2) {
    fail(
      `${where}abandonAfterSeconds`,
      `must be at least twice refreshSeconds (${settings.refreshSeconds * 2}), or polling visitors would be dropped`,
    )
  }
  return Object.freeze(settings)
}
