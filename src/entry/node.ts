// Node entry point: `npm start`. Reads the config, starts the bundled booking origin (embedded
// PGlite unless ANTEROOM_DATABASE_URL is set) when no origin is configured, builds the edge and serves it.
// With ANTEROOM_PROCESSES over 1 this process is the primary: it makes up once what would otherwise be
// made up per process (the queue secret, the signing key, the admin token) and forks that many workers,
// each of which does all of the above (./processes.ts).
import { randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { serve } from '@hono/node-server'
import { MemoryClaimGate } from '../adapters/memory/claim-gate.js'
import { type Config, configSecrets, loadConfig } from '../config/index.js'
import { generateSigningJwk } from '../core/admission-token.js'
import { isAnteroomError } from '../core/errors.js'
import { jsonLog, type Log } from '../core/log.js'
import { buildBooking } from './booking.js'
import { buildEdge } from './build.js'
import { isWorker, runPrimary, WORKER_ENV } from './processes.js'

/**
 * With no admin token configured, makes one for this run and writes it to .anteroom/admin-token
 * (mode 600): the log names the file, never the token.
 */
function ensureAdmin(config: Config, log: Log): Config {
  if (config.adminUsers.length > 0) return config
  const token = randomBytes(24).toString('base64url')
  mkdirSync('.anteroom', { recursive: true, mode: 0o700 })
  writeFileSync('.anteroom/admin-token', `${token}\n`, { mode: 0o600 })
  log('admin_token_created', { file: '.anteroom/admin-token', hint: 'sign in at /_anteroom/admin with the token in this file' })
  return Object.freeze({ ...config, adminUsers: [{ name: 'admin', token }] })
}

/**
 * The primary of several processes: what each would make up for itself (and so not agree on) is made
 * here once and handed to all of them, then the workers are forked and watched.
 */
async function primary(config: Config, log: Log, secrets: string[], adminMade: boolean): Promise<void> {
  const processes = config.processes === 'auto' ? Math.min(availableParallelism(), 256) : config.processes
  const env: Record<string, string> = {}
  if (adminMade) env.ANTEROOM_ADMIN_TOKEN = config.adminUsers[0]?.token ?? ''
  if (config.queueSecretGenerated) {
    env.ANTEROOM_QUEUE_SECRET = config.queueSecret
    log('warning', { message: 'ANTEROOM_QUEUE_SECRET is not set: its processes share a random one. Set it for several instances.' })
  }
  if (config.signingKeys === undefined) {
    const jwk = await generateSigningJwk(`dev-${Date.now().toString(36)}`)
    env.ANTEROOM_SIGNING_KEYS = JSON.stringify([jwk])
    secrets.push(...[jwk.d].filter((d): d is string => typeof d === 'string'))
    log('warning', { message: 'ANTEROOM_SIGNING_KEYS is not set: its processes share a fresh ES256 key. Set it for several instances.' })
  }
  log('processes', { processes })
  process.exit(await runPrimary({ processes, env, log }))
}

async function main(): Promise<void> {
  const loaded = loadConfig(process.env)
  // The log cuts out every secret the config holds; the admin token made below is added to them.
  const secrets = configSecrets(loaded)
  const lines: Log = jsonLog({ level: loaded.logLevel, write: (line) => process.stdout.write(line), secrets })
  // A worker's lines say which it is.
  const worker = Number(process.env[WORKER_ENV])
  const log: Log = isWorker() ? (event, fields) => lines(event, { ...fields, worker }) : lines
  const config = ensureAdmin(loaded, log)
  secrets.push(...config.adminUsers.map((u) => u.token))
  if (config.processes !== 1 && !isWorker()) return primary(config, log, secrets, config !== loaded)
  let originUrl = config.originUrl
  let booking: Awaited<ReturnType<typeof buildBooking>> | undefined
  // Without Redis, the edge and the bundled origin share one claim gate in this process: the origin
  // keeps the demo event's stock in it and the edge reads its counts (the demo room's `event`), so the
  // room stops admitting once the event has sold out. With Redis both use the gate's keys there.
  const gate = config.redisUrl ? undefined : new MemoryClaimGate()
  if (originUrl === undefined) {
    booking = await buildBooking({
      databaseUrl: config.databaseUrl,
      jwksUrl: `http://127.0.0.1:${config.port}/.well-known/jwks.json`,
      issuer: config.issuer,
      audience: config.audience,
      room: config.rooms[0]?.id ?? 'demo',
      endSessionOnPurchase: config.demoEndsSessions,
      redisUrl: config.redisUrl,
      laneEvents: config.laneEvents,
      gate,
      log,
      requestIdHeader: config.requestIdHeader,
      metrics: config.metrics
        ? { tokens: [...(config.metricsToken ? [config.metricsToken] : []), ...config.adminUsers.map((u) => u.token)] }
        : undefined,
    })
    const server = serve({ fetch: booking.app.fetch, hostname: '127.0.0.1', port: config.demoOriginPort })
    await new Promise((resolve) => server.once('listening', resolve))
    originUrl = `http://127.0.0.1:${config.demoOriginPort}`
    log('booking_origin', { url: originUrl, database: config.databaseUrl ? 'postgresql' : 'embedded PGlite', demoEvent: 'demo' })
  }
  if (config.queueSecretGenerated)
    log('warning', { message: 'ANTEROOM_QUEUE_SECRET is not set: using a random one. Fine for one instance; set it for several.' })
  if (config.signingKeys === undefined)
    log('warning', { message: 'ANTEROOM_SIGNING_KEYS is not set: using a fresh ES256 key. Set it for several instances.' })
  const edge = await buildEdge(config, { originUrl, log, gate })
  const server = serve({ fetch: edge.app.fetch, hostname: config.host, port: config.port })
  server.once('listening', () => {
    log('listening', {
      url: `http://${config.host}:${config.port}/`,
      store: config.redisUrl ? 'redis' : 'embedded',
      rooms: config.rooms.map((r) => r.id),
    })
  })
  let stopping = false
  const stop = () => {
    // Once: a worker may hear SIGINT from the terminal and SIGTERM from its primary.
    if (stopping) return
    stopping = true
    server.close()
    void Promise.allSettled([edge.close(), booking?.close()]).finally(() => process.exit(0))
  }
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
}

main().catch((err) => {
  if (isAnteroomError(err)) {
    process.stderr.write(`anteroom: ${err.message}\n`)
    process.exit(2)
  }
  process.stderr.write(`anteroom: failed to start: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
