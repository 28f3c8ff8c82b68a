// Configuration: read once at start-up from a JSON file (ANTEROOM_CONFIG) and the environment,
// validated into a frozen object. Every error names the bad field.
import { readFileSync } from 'node:fs'
import type { JWK } from 'jose'
import { AnteroomError } from '../core/errors.js'
import { isLogLevel, LOG_LEVELS, type LogLevel } from '../core/log.js'
import { parseStyleOrigins } from '../core/page-template.js'
import { parseRoomSettings, type RoomSettings } from '../core/settings.js'
import { type GuardConfig, guardSecrets, loadGuards } from './guards.js'
import { parseRedisUrl, RedisUrlError } from './redis-url.js'

/** With the bypass rules' secrets, the crawlers' DNS and the human check's provider (guards.ts). */
export interface Config extends GuardConfig {
  host: string
  port: number
  /** Where admitted traffic goes. Unset: `npm start` runs the bundled booking origin. */
  originUrl: string | undefined
  demoOriginPort: number
  /**
   * Unset: the embedded in-process store (one instance only). Otherwise one server (redis://, rediss://),
   * a Sentinel set (redis+sentinel://) or a Cluster (redis+cluster://), checked by parseRedisUrl.
   */
  redisUrl: string | undefined
  /** The bundled booking origin's PostgreSQL. Unset: embedded PGlite. */
  databaseUrl: string | undefined
  /** Whether the bundled booking origin sends Anteroom-Command: end-session after a confirmed purchase (true unless "false"). */
  demoEndsSessions: boolean
  /** HMAC secret for queue tokens. Generated when unset, which suits a single instance only. */
  queueSecret: string
  queueSecretGenerated: boolean
  /** Private ES256 JWKs; the first signs. Generated when unset. */
  signingKeys: JWK[] | undefined
  issuer: string
  audience: string
  secureCookies: boolean
  rooms: RoomSettings[]
  /** Where the admin API finds the last simulation report. */
  simReportPath: string
  /** How often each edge samples every room for the admin chart, seconds; 0 turns it off. */
  historySampleSeconds: number
  /** How often each edge records every room's minute for the analytics, seconds: whole minutes (60 by default); 0 turns it off. */
  analyticsSampleSeconds: number
  /** The largest request body the edge passes to the origin, bytes; larger ones get 413. */
  maxBodyBytes: number
  /** Admin API and UI credentials: name and bearer token. Empty: `npm start` makes one. */
  adminUsers: { name: string; token: string }[]
  /** Whether the edge and the booking origin count and serve Prometheus metrics (GET /_anteroom/metrics, GET /metrics). */
  metrics: boolean
  /** A bearer token that may read the metrics (besides the admin tokens); unset: admin tokens only. */
  metricsToken: string | undefined
  /** One visit in this many is timed for the latency histograms (every visit is counted). */
  metricsTimeEvery: number
  /** Log lines under this level are dropped. */
  logLevel: LogLevel
  /** A request header whose value is the request's id in log lines (a trusted proxy's); unset: ids are made. */
  requestIdHeader: string | undefined
  /** Origins a page template's style sheet may come from (ANTEROOM_TEMPLATE_STYLE_ORIGINS): https, or http on loopback. */
  templateStyleOrigins: string[]
  /**
   * Events whose claims the bundled booking origin decides in an ordered lane (ANTEROOM_LANE_EVENTS,
   * src/booking/lane): a Redis Stream each and an allocator in this process. Needs Redis. Empty: none.
   */
  laneEvents: string[]
  /**
   * How many processes `npm start` serves from (ANTEROOM_PROCESSES): a whole number, or "auto" for one a
   * core (src/entry/processes.ts). More than one needs Redis, and a PostgreSQL server for the bundled
   * origin: the embedded stores live in one process's memory.
   */
  processes: number | 'auto'
}

const DEFAULT_ROOM = {
  id: 'demo',
  paths: ['/'],
  totalActiveUsers: 50,
  newUsersPerMinute: 30,
  sessionDurationSeconds: 600,
  refreshSeconds: 10,
  title: 'You are in line for the demo sale',
  // The bundled booking origin ends a visitor's session after their purchase: the demo lets it.
  originCommands: 'end-session',
  // It sells the demo event: once its stock says nothing is free, the room lets nobody new in.
  event: 'demo',
}

function bad(field: string, message: string): never {
  throw new AnteroomError('ERR_CONFIG', `${field}: ${message}`, { field })
}

function port(value: unknown, field: string, fallback: number): number {
  if (value === undefined || value === '') return fallback
  const n = typeof value === 'string' ? Number(value) : value
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 65535) bad(field, 'must be a port number (0-65535)')
  return n
}

/** ANTEROOM_PROCESSES: 1 unless set; more than one only where nothing lives in one process's memory. */
function processes(value: unknown, redis: unknown, database: unknown, origin: unknown): number | 'auto' {
  if (value === undefined || value === '') return 1
  const n = value === 'auto' ? 'auto' : typeof value === 'string' ? (/^\d{1,3}$/.test(value) ? Number(value) : Number.NaN) : value
  if (n !== 'auto' && (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 256))
    bad('ANTEROOM_PROCESSES', 'must be a whole number from 1 to 256, or auto (one a core)')
  if (n === 1) return 1
  if (redis === undefined || redis === '')
    bad('ANTEROOM_PROCESSES', 'more than one process needs ANTEROOM_REDIS_URL: the embedded store lives in one process')
  if ((origin === undefined || origin === '') && (database === undefined || database === ''))
    bad(
      'ANTEROOM_PROCESSES',
      'more than one process needs ANTEROOM_DATABASE_URL for the bundled booking origin (or ANTEROOM_ORIGIN): embedded PGlite lives in one process',
    )
  return n as number | 'auto'
}

/** 1 MiB unless set; between 0 (no bodies at all) and 1 GiB. */
function bodyBytes(value: unknown): number {
  if (value === undefined || value === '') return 1024 * 1024
  const n = typeof value === 'string' ? Number(value) : value
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 1024 ** 3)
    bad('ANTEROOM_MAX_BODY_BYTES', `must be a whole number of bytes between 0 and ${1024 ** 3}`)
  return n
}

function url(value: unknown, field: string, protocols: string[]): string | undefined {
  if (value === undefined || value === '') return undefined
  if (typeof value !== 'string') bad(field, 'must be a URL')
  let parsed: URL
  try {
    parsed = new URL(value)
  } catch {
    bad(field, 'must be a URL')
  }
  if (!protocols.includes(parsed.protocol)) bad(field, `must start with ${protocols.join(' or ')}//`)
  return value
}

/** ANTEROOM_REDIS_URL: one server, a Sentinel set or a Cluster (src/config/redis-url.ts). */
function redisUrl(value: unknown): string | undefined {
  const field = 'ANTEROOM_REDIS_URL'
  if (value === undefined || value === '') return undefined
  if (typeof value !== 'string') bad(field, 'must be a URL')
  try {
    parseRedisUrl(value)
  } catch (err) {
    if (err instanceof RedisUrlError) bad(field, err.message)
    throw err
  }
  return value
}

function json(text: string, field: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    bad(field, 'must be valid JSON')
  }
}

function randomSecret(): string {
  const bytes = new Uint8Array(32)
  crypto.getRandomValues(bytes)
  return Buffer.from(bytes).toString('base64url')
}

function sampleSeconds(value: unknown): number {
  if (value === undefined || value === '') return 10
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0 || n > 3600) bad('ANTEROOM_HISTORY_SAMPLE_SECONDS', 'must be a whole number of seconds from 0 to 3600')
  return n
}

/** The analytics keep one sample a minute: the sampler runs at minute starts, every minute or every few. */
function analyticsSeconds(value: unknown): number {
  if (value === undefined || value === '') return 60
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0 || n > 3600 || n % 60 !== 0)
    bad('ANTEROOM_ANALYTICS_SAMPLE_SECONDS', 'must be 0 (off) or a whole number of minutes in seconds, from 60 to 3600')
  return n
}

/** An event id, as a room's `event` setting names one (core/settings.ts). */
const EVENT_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/

/** ANTEROOM_LANE_EVENTS: a comma-separated list (or, in the file, a JSON list) of event ids; the lane needs Redis. */
function laneEvents(value: unknown, redis: string | undefined): string[] {
  const text = Array.isArray(value) ? value.join(',') : value
  if (text === undefined || text === '') return []
  if (typeof text !== 'string') bad('ANTEROOM_LANE_EVENTS', 'must be a list of event ids')
  const events = text
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '')
  for (const e of events)
    if (!EVENT_ID.test(e))
      bad('ANTEROOM_LANE_EVENTS', `"${e.slice(0, 80)}" is not an event id (1-64 letters, digits, dots, dashes or underscores)`)
  if (new Set(events).size !== events.length) bad('ANTEROOM_LANE_EVENTS', 'names an event twice')
  if (events.length > 0 && redis === undefined) bad('ANTEROOM_LANE_EVENTS', 'the ordered lane needs Redis: set ANTEROOM_REDIS_URL too')
  return events
}

/** ANTEROOM_TEMPLATE_STYLE_ORIGINS: a comma-separated list (or, in the file, a JSON list) of origins. */
function styleOrigins(value: unknown): string[] {
  const text = Array.isArray(value) ? value.join(',') : value
  if (text !== undefined && typeof text !== 'string') bad('ANTEROOM_TEMPLATE_STYLE_ORIGINS', 'must be a list of origins')
  try {
    return parseStyleOrigins(text)
  } catch (err) {
    bad('ANTEROOM_TEMPLATE_STYLE_ORIGINS', (err as Error).message)
  }
}

export function loadConfig(env: Record<string, string | undefined>): Config {
  let file: Record<string, unknown> = {}
  if (env.ANTEROOM_CONFIG) {
    let text: string
    try {
      text = readFileSync(env.ANTEROOM_CONFIG, 'utf8')
    } catch {
      bad('ANTEROOM_CONFIG', `cannot read ${env.ANTEROOM_CONFIG}`)
    }
    const parsed = json(text, 'ANTEROOM_CONFIG')
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) bad('ANTEROOM_CONFIG', 'must hold a JSON object')
    file = parsed as Record<string, unknown>
  }
  const pick = (envName: string, key: string) => env[envName] ?? (file[key] as string | undefined)

  const roomsInput = env.ANTEROOM_ROOMS !== undefined ? json(env.ANTEROOM_ROOMS, 'ANTEROOM_ROOMS') : (file.rooms ?? [DEFAULT_ROOM])
  if (!Array.isArray(roomsInput) || roomsInput.length === 0) bad('rooms', 'must be a non-empty list')
  const rooms = roomsInput.map((r, i) => {
    try {
      return parseRoomSettings(r, `rooms[${i}].`)
    } catch (err) {
      if (err instanceof AnteroomError) bad(err.field ?? `rooms[${i}]`, err.message.replace(/^[^:]*: /, ''))
      throw err
    }
  })
  const ids = new Set<string>()
  rooms.forEach((r, i) => {
    if (ids.has(r.id)) bad(`rooms[${i}].id`, `"${r.id}" is used twice`)
    ids.add(r.id)
  })

  const secret = pick('ANTEROOM_QUEUE_SECRET', 'queueSecret')
  if (secret !== undefined && (typeof secret !== 'string' || secret.length < 32))
    bad('ANTEROOM_QUEUE_SECRET', 'must be at least 32 characters')

  let signingKeys: JWK[] | undefined
  const keysInput = env.ANTEROOM_SIGNING_KEYS !== undefined ? json(env.ANTEROOM_SIGNING_KEYS, 'ANTEROOM_SIGNING_KEYS') : file.signingKeys
  if (keysInput !== undefined) {
    if (!Array.isArray(keysInput) || keysInput.length === 0) bad('ANTEROOM_SIGNING_KEYS', 'must be a non-empty JSON list of private JWKs')
    signingKeys = keysInput as JWK[]
  }

  const adminUsers: { name: string; token: string }[] = []
  const single = pick('ANTEROOM_ADMIN_TOKEN', 'adminToken')
  if (single !== undefined) adminUsers.push({ name: 'admin', token: single })
  const many = pick('ANTEROOM_ADMIN_TOKENS', 'adminTokens')
  if (many !== undefined) {
    for (const [i, pair] of String(many).split(',').entries()) {
      const at = pair.indexOf(':')
      const name = pair.slice(0, at).trim()
      if (at < 1 || !/^[A-Za-z0-9_.@-]{1,64}$/.test(name)) bad(`ANTEROOM_ADMIN_TOKENS[${i}]`, 'must be name:token')
      adminUsers.push({ name, token: pair.slice(at + 1).trim() })
    }
  }
  adminUsers.forEach((u, i) => {
    if (u.token.length < 24)
      bad(
        i === 0 && single !== undefined ? 'ANTEROOM_ADMIN_TOKEN' : `ANTEROOM_ADMIN_TOKENS[${i}]`,
        'a token must be at least 24 characters',
      )
  })

  const metrics = pick('ANTEROOM_METRICS', 'metrics') ?? 'on'
  if (!['on', 'off', true, false].includes(metrics as string | boolean)) bad('ANTEROOM_METRICS', 'must be on or off')
  const metricsToken = pick('ANTEROOM_METRICS_TOKEN', 'metricsToken')
  if (metricsToken !== undefined && (typeof metricsToken !== 'string' || metricsToken.length < 24))
    bad('ANTEROOM_METRICS_TOKEN', 'must be at least 24 characters')
  const timeEveryInput = pick('ANTEROOM_METRICS_TIME_EVERY', 'metricsTimeEvery')
  const timeEvery = timeEveryInput === undefined || timeEveryInput === '' ? 16 : Number(timeEveryInput)
  if (!Number.isInteger(timeEvery) || timeEvery < 1 || timeEvery > 1024)
    bad('ANTEROOM_METRICS_TIME_EVERY', 'must be a whole number from 1 (time every visit) to 1024')
  const logLevel = pick('ANTEROOM_LOG_LEVEL', 'logLevel') ?? 'info'
  if (!isLogLevel(logLevel)) bad('ANTEROOM_LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`)
  const requestIdHeader = pick('ANTEROOM_REQUEST_ID_HEADER', 'requestIdHeader')
  if (requestIdHeader !== undefined && (typeof requestIdHeader !== 'string' || !/^[A-Za-z0-9-]{1,64}$/.test(requestIdHeader)))
    bad('ANTEROOM_REQUEST_ID_HEADER', 'must be a header name (letters, digits and -)')

  const secure = pick('ANTEROOM_SECURE_COOKIES', 'secureCookies')
  const demoEnds = pick('ANTEROOM_DEMO_END_SESSION', 'demoEndsSessions')
  if (demoEnds !== undefined && !['true', 'false', true, false].includes(demoEnds as string | boolean))
    bad('ANTEROOM_DEMO_END_SESSION', 'must be true or false')
  return Object.freeze({
    host: pick('ANTEROOM_HOST', 'host') ?? '127.0.0.1',
    port: port(pick('ANTEROOM_PORT', 'port'), 'ANTEROOM_PORT', 8080),
    originUrl: url(pick('ANTEROOM_ORIGIN', 'origin'), 'ANTEROOM_ORIGIN', ['http:', 'https:']),
    demoOriginPort: port(pick('ANTEROOM_DEMO_ORIGIN_PORT', 'demoOriginPort'), 'ANTEROOM_DEMO_ORIGIN_PORT', 8081),
    redisUrl: redisUrl(pick('ANTEROOM_REDIS_URL', 'redisUrl')),
    databaseUrl: url(pick('ANTEROOM_DATABASE_URL', 'databaseUrl'), 'ANTEROOM_DATABASE_URL', ['postgres:', 'postgresql:']),
    demoEndsSessions: demoEnds !== 'false' && (demoEnds as unknown) !== false,
    queueSecret: secret ?? randomSecret(),
    queueSecretGenerated: secret === undefined,
    signingKeys,
    issuer: pick('ANTEROOM_ISSUER', 'issuer') ?? 'anteroom',
    audience: pick('ANTEROOM_AUDIENCE', 'audience') ?? 'origin',
    secureCookies: secure === 'true' || (secure as unknown) === true,
    rooms,
    adminUsers,
    simReportPath: pick('ANTEROOM_SIM_REPORT', 'simReportPath') ?? '.tmp/sim/last-report.html',
    historySampleSeconds: sampleSeconds(pick('ANTEROOM_HISTORY_SAMPLE_SECONDS', 'historySampleSeconds')),
    analyticsSampleSeconds: analyticsSeconds(pick('ANTEROOM_ANALYTICS_SAMPLE_SECONDS', 'analyticsSampleSeconds')),
    maxBodyBytes: bodyBytes(pick('ANTEROOM_MAX_BODY_BYTES', 'maxBodyBytes')),
    metrics: metrics === 'on' || (metrics as unknown) === true,
    metricsToken,
    metricsTimeEvery: timeEvery,
    logLevel,
    requestIdHeader: requestIdHeader?.toLowerCase(),
    templateStyleOrigins: styleOrigins(pick('ANTEROOM_TEMPLATE_STYLE_ORIGINS', 'templateStyleOrigins')),
    laneEvents: laneEvents(pick('ANTEROOM_LANE_EVENTS', 'laneEvents'), redisUrl(pick('ANTEROOM_REDIS_URL', 'redisUrl'))),
    processes: processes(
      pick('ANTEROOM_PROCESSES', 'processes'),
      pick('ANTEROOM_REDIS_URL', 'redisUrl'),
      pick('ANTEROOM_DATABASE_URL', 'databaseUrl'),
      pick('ANTEROOM_ORIGIN', 'origin'),
    ),
    ...loadGuards((envName, key) => pick(envName, key) as string | undefined, rooms),
  })
}

/** The password in a URL, if it has one. */
function passwordOf(url: string | undefined): string[] {
  if (url === undefined) return []
  // A Sentinel or Cluster URL lists several hosts, which URL cannot read: take what lies between : and @.
  const found = /^[a-z+]+:\/\/[^:@/]*:([^@/]+)@/i.exec(url)?.[1]
  if (found === undefined) return []
  let decoded = found
  try {
    decoded = decodeURIComponent(found)
  } catch {}
  return [...new Set([found, decoded])]
}

/**
 * Every secret the config holds, for the log to cut out wherever one turns up: the queue secret, the
 * admin and metrics tokens, the signing keys' private parts, and the Redis and database passwords.
 */
export function configSecrets(config: Config): string[] {
  const keyParts = (config.signingKeys ?? []).flatMap((k) => [k.d, k.p, k.q, k.dp, k.dq, k.qi, k.k].filter((v) => typeof v === 'string'))
  return [
    config.queueSecret,
    ...config.adminUsers.map((u) => u.token),
    ...(config.metricsToken === undefined ? [] : [config.metricsToken]),
    ...(keyParts as string[]),
    ...passwordOf(config.redisUrl),
    ...passwordOf(config.databaseUrl),
    ...guardSecrets(config),
  ]
}
