// The edge as a Worker: the same Hono app as on Node (src/entry/assemble.ts), with Worker parts:
// stores reached through StoreRelay Durable Objects (or a client per call), fetch() to the origin,
// the plain-JavaScript queue-token MAC (as on Node: synchronous, where WebCrypto is a turn per call),
// and settings and secrets from the Worker's env.

import { dohResolver } from '../src/adapters/fetch/doh-resolver.js'
import { FetchOrigin } from '../src/adapters/fetch/origin.js'
import { jsMac } from '../src/adapters/js/mac.js'
import { memoryStores } from '../src/adapters/memory/stores.js'
import { webCryptoDigest } from '../src/adapters/webcrypto/digest.js'
import { configSecrets, loadConfig } from '../src/config/index.js'
import { AnteroomError, isAnteroomError } from '../src/core/errors.js'
import { jsonLog } from '../src/core/log.js'
import { type AssembledEdge, assembleEdge } from '../src/entry/assemble.js'
import { errorResponse } from '../src/http/errors.js'
import type { Clock } from '../src/ports/clock.js'
import type { Stores } from '../src/ports/stores.js'
import { ADMIN_ASSETS } from './bundled.js'
import type { WorkerEnv } from './env.js'
import { perCallDispatch } from './redis-stores.js'
import { type Dispatch, remoteStores } from './remote-stores.js'

export interface WorkerOptions {
  /** Tests hand in a manual clock; production leaves it out. */
  clock?: Clock
}

interface WorkerEdge extends AssembledEdge {
  /** Work left after a response (the rooms reload a request started, the admin chart's sample), or undefined. */
  background(): Promise<void> | undefined
  sampleAll(): Promise<void>
}

function bad(field: string, message: string): never {
  throw new AnteroomError('ERR_CONFIG', `${field}: ${message}`, { field })
}

/** Lines written before the config is read (a start that failed): they name a setting, never its value. */
const startLog = jsonLog({ write: (line) => console.log(line.trimEnd()) })

/** The ANTEROOM_* strings of the env: [vars] and secrets; bindings are not strings. */
function settingsFrom(env: WorkerEnv): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {}
  for (const [name, value] of Object.entries(env)) if (name.startsWith('ANTEROOM_') && typeof value === 'string') out[name] = value
  return out
}

function storesFor(env: WorkerEnv, redisUrl: string): Stores {
  const shards = Number(env.ANTEROOM_RELAY_SHARDS ?? '4')
  if (!Number.isInteger(shards) || shards < 1 || shards > 256) bad('ANTEROOM_RELAY_SHARDS', 'must be a whole number from 1 to 256')
  let dispatch: Dispatch
  const mode = env.ANTEROOM_WORKER_REDIS ?? 'relay'
  if (mode === 'relay') {
    const relays = env.STORE_RELAY
    if (relays === undefined) bad('STORE_RELAY', 'the Durable Object binding is missing from wrangler.toml')
    // Ids are plain values and kept; stubs are made per call, inside the request that uses them.
    const ids = new Map<string, DurableObjectId>()
    dispatch = (route, call) => {
      let id = ids.get(route)
      if (id === undefined) ids.set(route, (id = relays.idFromName(route)))
      return relays.get(id).call(call)
    }
  } else if (mode === 'per-call') {
    dispatch = perCallDispatch(redisUrl)
  } else {
    bad('ANTEROOM_WORKER_REDIS', 'must be "relay" or "per-call" when ANTEROOM_REDIS_URL is set')
  }
  return remoteStores(dispatch, { pollShards: shards })
}

async function buildWorkerEdge(env: WorkerEnv, options: WorkerOptions): Promise<WorkerEdge> {
  const config = loadConfig(settingsFrom(env))
  // One JSON line per event, scrubbed of every secret the config holds (core/log.ts).
  const log = jsonLog({ level: config.logLevel, write: (line) => console.log(line.trimEnd()), secrets: configSecrets(config) })
  if (config.originUrl === undefined) bad('ANTEROOM_ORIGIN', 'must be set: the Worker forwards admitted visitors there')
  const now = () => options.clock?.now() ?? Date.now()
  let stores: Stores
  const mode = env.ANTEROOM_WORKER_REDIS ?? 'relay'
  if (config.redisUrl !== undefined) {
    // Many isolates share one line: they must all sign and check with the same secrets.
    if (config.queueSecretGenerated) bad('ANTEROOM_QUEUE_SECRET', 'must be set (wrangler secret put) when Redis is shared')
    if (config.signingKeys === undefined) bad('ANTEROOM_SIGNING_KEYS', 'must be set (wrangler secret put) when Redis is shared')
    stores = storesFor(env, config.redisUrl)
  } else if (mode === 'embedded') {
    // Asked for: the embedded store of this one isolate, for trials only (isolates do not share it).
    stores = memoryStores(now)
  } else {
    bad('ANTEROOM_REDIS_URL', 'must be set (wrangler secret put), or ANTEROOM_WORKER_REDIS=embedded for a one-isolate trial')
  }
  const edge = await assembleEdge({
    // Cloudflare sets cf-ray on every request (a client cannot): the log lines' request id unless another header is named.
    config: { ...config, requestIdHeader: config.requestIdHeader ?? 'cf-ray' },
    ...stores,
    origin: new FetchOrigin({ url: config.originUrl }),
    mac: jsMac(config.queueSecret),
    digest: webCryptoDigest,
    adminAssets: ADMIN_ASSETS,
    clock: options.clock,
    log,
    clientIp: (c) => c.req.header('cf-connecting-ip'),
    // A Worker has no DNS sockets: crawler checks ask DNS over HTTPS (ANTEROOM_DOH_URL).
    resolver: dohResolver({ url: config.dohUrl }),
    scheme: (c) => (new URL(c.req.url).protocol === 'https:' ? 'https' : 'http'),
  })
  const sampleMs = config.historySampleSeconds * 1000
  let sampledAt = Number.NEGATIVE_INFINITY
  const sampleAll = async () => {
    // The cron's run also sends refusals that an isolate counted and no request has sent since, and
    // records the rooms' minutes for the analytics (the cron fires as a minute begins).
    const flush = Promise.all([edge.deps.refusals.flush(), edge.analytics.sample()]).then(() => {})
    if (sampleMs === 0) return flush
    await Promise.all([flush, ...edge.rooms.rooms().map((r) => stores.queue.recordSample(r.id, options.clock?.now()).catch(() => {}))])
  }
  return {
    ...edge,
    sampleAll,
    background() {
      const reload = edge.rooms.pending()
      // Every isolate samples at most once per period; the store keeps one sample per bucket.
      const sample = sampleMs > 0 && now() - sampledAt >= sampleMs
      if (sample) sampledAt = now()
      if (reload === undefined && !sample) return undefined
      return Promise.all([reload, sample ? sampleAll() : undefined]).then(() => {})
    },
  }
}

/** The detail (which setting, never its value) goes to the log; visitors learn only that it is a configuration fault. */
function configError(err: unknown): Response {
  startLog('worker_start_failed', {
    code: isAnteroomError(err) ? err.code : 'ERR_CONFIG',
    message: isAnteroomError(err) ? err.message : `${err instanceof Error ? err.name : 'error'} while starting`,
  })
  const shown = new AnteroomError(
    'ERR_CONFIG',
    'The waiting room is not configured correctly; the operator can see why in the Worker log.',
    {
      expose: true,
    },
  )
  return errorResponse(shown, { json: true })
}

export function createWorker(options: WorkerOptions = {}) {
  let built: Promise<WorkerEdge> | undefined
  const edgeFor = (env: WorkerEnv) => {
    built ??= buildWorkerEdge(env, options).catch((err) => {
      built = undefined
      throw err
    })
    return built
  }
  return {
    async fetch(request: Request, env: WorkerEnv, ctx: ExecutionContext): Promise<Response> {
      let edge: WorkerEdge
      try {
        edge = await edgeFor(env)
      } catch (err) {
        return configError(err)
      }
      const res = await edge.app.fetch(request, env, ctx)
      const rest = edge.background()
      if (rest !== undefined) ctx.waitUntil(rest)
      return res
    },
    /** The cron trigger keeps the admin chart going when no visitor is polling. */
    async scheduled(_controller: ScheduledController, env: WorkerEnv, ctx: ExecutionContext): Promise<void> {
      ctx.waitUntil(edgeFor(env).then((edge) => edge.sampleAll()))
    },
  }
}
