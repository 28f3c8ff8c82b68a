// Builds the ioredis client for ANTEROOM_REDIS_URL (one server, a Sentinel set or a Cluster: see
// src/config/redis-url.ts) with the failure behaviour we chose: fail fast, never queue commands while
// Redis is away, so a visitor gets the room's onStoreError answer instead of a hang; and follow a
// failover on its own, so the edge answers from the promoted replica as soon as it is there.
import { Cluster, Redis } from 'ioredis'
import { parseRedisUrl, type RedisTarget } from '../../config/redis-url.js'
import { keepStringMethodsFast } from './fast-strings.js'

// Loading ioredis (just above) slowed String.prototype down: see fast-strings.ts.
keepStringMethodsFast()

/** What the stores run on: a connection to one server (plain or found through Sentinel), or a Cluster. */
export type RedisClient = Redis | Cluster

/** Between reconnection attempts: 100 ms, 200 ms, ... at most 1 s, for as long as it takes. */
const retry = (attempt: number) => Math.min(attempt * 100, 1000)

/**
 * Through Sentinel, each attempt asks a sentinel for the master and tries it: 50 ms, 100 ms, ... at most
 * 250 ms apart, so an edge is on the promoted replica within about 250 ms of the promotion (with the
 * 1-s backoff it took up to a second more). A sentinel answers such a question in microseconds.
 */
const followFailover = (attempt: number) => Math.min(attempt * 50, 250)

/**
 * Per command: no retry on another connection, an answer within 1 s or ERR_STORE_UNAVAILABLE, and a
 * connection within 2 s. These apply to every connection, the Cluster's nodes included.
 */
/** How long a command may go unanswered before it fails (every connection's FAIL_FAST). */
export const COMMAND_TIMEOUT_MS = 1000
const FAIL_FAST = { maxRetriesPerRequest: 0, commandTimeout: COMMAND_TIMEOUT_MS, connectTimeout: 2000 } as const

/**
 * A master turned replica answers writes with READONLY: reconnect, which asks the sentinels again (or,
 * for one server behind a name that a managed failover moves, resolves the name again). The command
 * itself fails (nothing is queued), and the room's onStoreError answers for it.
 */
const reconnectOnReadOnly = (err: Error) => (err.message.includes('READONLY') ? 1 : false)

export interface ConnectOptions {
  /**
   * Through Sentinel: keep a subscription to +switch-master on every sentinel, so that a connection to a
   * master that hangs (partitioned, frozen) moves to the promoted replica. On by default; a client used
   * for one call only (the Worker's per-call mode) turns it off.
   */
  watchSentinels?: boolean
}

export function connectRedis(url: string, onError: (err: Error) => void = () => {}, options: ConnectOptions = {}): RedisClient {
  const target = parseRedisUrl(url)
  let redis: RedisClient
  if (target.kind === 'single') {
    redis = new Redis(url, {
      ...FAIL_FAST,
      enableOfflineQueue: false,
      retryStrategy: retry,
      reconnectOnError: reconnectOnReadOnly,
      lazyConnect: false,
    })
  } else if (target.kind === 'sentinel') {
    redis = new Redis({
      sentinels: target.sentinels,
      name: target.name,
      db: target.db,
      username: target.username,
      password: target.password,
      ...FAIL_FAST,
      enableOfflineQueue: false,
      // Each reconnection asks the sentinels for the master again: while the old one is dead and not yet
      // replaced the attempts fail, and the first one after the promotion reaches the new master.
      retryStrategy: followFailover,
      // When a round over all the sentinels found no master to connect to (ioredis also counts a round in
      // which the master they named refused the connection, as during a failover).
      sentinelRetryStrategy: followFailover,
      // A sentinel that accepts the connection but does not answer must not hold up the reconnection.
      sentinelCommandTimeout: 1000,
      // Not ioredis's own failoverDetector: on +switch-master it drops the connection even while a
      // reconnection is under way, and a reconnection interrupted that way ends the client for good
      // (status "end", never retried; seen in test/redis-sentinel.test.ts when the master was killed).
      // watchSentinels below does the same job only for a connection that is up.
      failoverDetector: false,
      // A connection dropped on purpose (watchSentinels) whose peer does not answer is destroyed after this.
      disconnectTimeout: 500,
      reconnectOnError: reconnectOnReadOnly,
      lazyConnect: false,
    })
    if (options.watchSentinels !== false) watchSentinels(redis, target)
  } else {
    redis = new Cluster(target.nodes, {
      // No queue while the cluster is not ready; its nodes' connections queue until they connect (ioredis
      // forces that), but FAIL_FAST's commandTimeout bounds every command at 1 s all the same.
      enableOfflineQueue: false,
      // Reads from masters only: the scripts write, and a replica's copy may be behind.
      scaleReads: 'master',
      // When no node answers at all.
      clusterRetryStrategy: retry,
      // A command to a master that died is retried every 100 ms (each time after refreshing the slot map)
      // until a node serves its slot again or commandTimeout ends it; MOVED and CLUSTERDOWN likewise.
      retryDelayOnFailover: 100,
      retryDelayOnClusterDown: 100,
      retryDelayOnTryAgain: 100,
      maxRedirections: 16,
      slotsRefreshTimeout: 1000,
      redisOptions: { ...FAIL_FAST, username: target.username, password: target.password },
    })
  }
  // Connection errors surface as ERR_STORE_UNAVAILABLE on the calls that need Redis; here they are only logged.
  redis.on('error', onError)
  return redis
}

const SWITCH_MASTER = '+switch-master'

/**
 * Subscribes to +switch-master on each sentinel. When one announces a new master for our name while the
 * client is connected elsewhere, the client drops that connection and reconnects, which asks the
 * sentinels for the master. A master that died closes the connection by itself; this is for one that
 * hangs, whose connection would otherwise stay open (every command timing out) until TCP gives up.
 * The subscriptions end with the client.
 */
function watchSentinels(redis: Redis, target: Extract<RedisTarget, { kind: 'sentinel' }>): void {
  const watchers = target.sentinels.map(({ host, port }) => {
    const sub = new Redis({
      host,
      port,
      protocol: 2,
      connectTimeout: 2000,
      enableOfflineQueue: true,
      autoResubscribe: false,
      maxRetriesPerRequest: null,
      retryStrategy: (attempt) => Math.min(attempt * 500, 5000),
    })
    sub.on('error', () => {})
    sub.on('ready', () => {
      sub.subscribe(SWITCH_MASTER).catch(() => {})
    })
    sub.on('message', (channel: string, message: string) => {
      // "<master-name> <old-ip> <old-port> <new-ip> <new-port>"
      const [name, , , newHost, newPort] = message.split(' ')
      if (channel !== SWITCH_MASTER || name !== target.name || redis.status !== 'ready') return
      if (redis.stream?.remoteAddress === newHost && redis.stream?.remotePort === Number(newPort)) return
      redis.disconnect(true)
    })
    return sub
  })
  redis.once('end', () => {
    for (const w of watchers) w.disconnect()
  })
}

/**
 * Resolves true once the client is connected, false after `ms` without a connection, or at the first
 * connection error when `failOnError` is set.
 */
export async function whenReady(redis: RedisClient, ms: number, failOnError = false): Promise<boolean> {
  if (redis.status === 'ready') return true
  return new Promise<boolean>((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer)
      redis.off('ready', onReady)
      redis.off('error', onError)
      resolve(ok)
    }
    const timer = setTimeout(() => done(false), ms)
    const onReady = () => done(true)
    const onError = () => {
      if (failOnError) done(false)
    }
    redis.on('ready', onReady)
    redis.on('error', onError)
  })
}
