// Db on a PostgreSQL server through the `postgres` driver (3.4.9). Every statement is prepared, once
// per connection, so a statement with parameters costs one round trip (Bind/Execute/Sync) after the
// first instead of two (Parse/Describe/Flush, then Bind/Execute/Sync).
//
// Single statements run on one pool, pipelined. Transactions run on connections of their own, each a
// client of one connection that runs one transaction at a time (BEGIN ... COMMIT sent here), never
// through the driver's sql.begin(), for two reasons:
// - sql.begin() reserves its connection only if its BEGIN is written with room left in that
//   connection's pipeline. Prepared statements are pipelined onto busy connections (unprepared ones
//   with parameters never are: each waits for its Describe), so under a rush the BEGIN could land as
//   the 100th message (max_pipeline) or meet socket back-pressure. PostgreSQL ran the BEGIN anyway;
//   the driver failed the transaction with UNSAFE_TRANSACTION and left the pooled connection inside
//   the open transaction, where other requests' statements then ran until some later COMMIT, ROLLBACK
//   or close decided their fate (test/postgres-prepared.test.ts).
// - When its connection is lost mid-transaction, sql.begin() still writes its ROLLBACK to the closed
//   connection: a TypeError thrown from a timer (Immediate.nextWrite), which ends the process.
//
// The driver does not recover cleanly from a lost connection either: a connection whose socket died
// with a write buffered keeps that write and reuses it on reconnecting (the server reads garbage, or
// the start-up message is never flushed and the connect times out); a connection killed while the
// driver fetches the server's array types rejects a promise nobody holds (an unhandled rejection); a
// connection closed cleanly during start-up can leave its query waiting forever. So a client that
// lost a connection is retired: new work goes to a fresh client, the old one finishes what it can
// for a second and is then destroyed, failing the rest. The array types fetched by the first client
// are handed to the next ones, which do not fetch them again. And no statement waits for an answer
// longer than NO_ANSWER_MS (longer than the session's statement_timeout) once it is handed to the
// driver.
//
// Nor does the driver end a client cleanly while statements wait in its own queue: a connection that
// ends then is reconnected for them, after end() has resolved (and after end({ timeout: 0 }), whose
// destroy loses the race on a busy loop), and stays open, idle, for good. A rush retired a client
// that way and leaked its connections (test/postgres-pool.test.ts). So statements wait here rather
// than in the driver: the statement pool is handed at most what its connections hold (one running
// and max_pipeline behind it, 100 by default, on each), and the rest wait in order for room. The
// driver still queues a few while a connection is connecting or waits for a new statement's
// description, so the cap only keeps its queue short. A statement's NO_ANSWER_MS counts from its
// hand-over, so a long queue under a rush is not taken for a dead server. And a client is ended
// only once no statement handed to it is left, or at a deadline; if the driver reconnected for some
// anyway, it is closed again once they are done.
//
// Connection failures surface as ERR_DB_UNAVAILABLE, a 503 with Retry-After (./unavailable.ts).
import postgres from 'postgres'
import type { Db, Sql } from './db.js'
import { isDbUnavailable, noAnswer, unavailable } from './unavailable.js'

type Params = Parameters<postgres.Sql['unsafe']>[1]
type Client = postgres.Sql
type ClientMore = Partial<postgres.Options<Record<string, never>>>

/** Session-wide statement_timeout: backs up the per-transaction ones, also for single statements. */
const STATEMENT_TIMEOUT_MS = 10_000
/** A statement not answered by then fails as ERR_DB_UNAVAILABLE, and its client is retired. */
const NO_ANSWER_MS = STATEMENT_TIMEOUT_MS + 5000
/** How long a retired client may finish the work it has before it is destroyed, seconds. */
const RETIRE_SECONDS = 1
/** How long close() lets each client finish the work it has, seconds. */
const CLOSE_SECONDS = 5
/** The driver's max_pipeline when none is given. */
const DRIVER_PIPELINE = 100

export interface PostgresDbOptions {
  /** Connections in all: the statement pool's and the transaction connections (default 10). */
  max?: number
  /** Of those, the connections that run transactions (default a third of max, at least 1). */
  transactionMax?: number
  /**
   * How many statements may wait behind the one running on a statement connection (the driver's
   * max_pipeline, default 100). More is fewer round trips under load; fewer is less waiting behind a
   * statement that waits for a lock.
   */
  maxPipeline?: number
  /**
   * A statement handed to the driver and not answered by then fails as ERR_DB_UNAVAILABLE and its
   * client is retired (default 15,000 ms: longer than the session's statement_timeout).
   */
  noAnswerMs?: number
}

/** The driver's array types (text[] and the like), learnt by the first client that fetched them. */
interface ArrayTypes {
  parsers: Record<number, unknown>
  serializers: Record<number, unknown>
  typeArrayMap: Record<number, number>
}

interface ClientOptions {
  parsers: Record<number, unknown>
  serializers: Record<number, unknown>
  fetch_types: boolean
  shared: { typeArrayMap: Record<number, number> }
}

export function postgresDb(url: string, options: PostgresDbOptions = {}): Db {
  const max = options.max ?? 10
  // setTimeout takes at most 2^31 - 1 ms (more fires at once).
  const noAnswerMs = Math.min(Math.max(1, options.noAnswerMs ?? NO_ANSWER_MS), 2 ** 31 - 1)
  const transactionMax = options.transactionMax ?? Math.max(1, Math.floor(max / 3))
  let types: ArrayTypes | undefined
  /** Clients that may still fetch the array types themselves: until the first one has them. */
  const fetching = new Set<Client>()
  let closed = false

  function newClient(size: number, more: ClientMore = {}): Client {
    const client = postgres(url, {
      max: size,
      onnotice: () => {},
      connection: { statement_timeout: STATEMENT_TIMEOUT_MS },
      // While the server is away, a request waiting for a connection fails at once instead of after a
      // growing back-off delay; a new connection is tried as soon as a request needs one.
      backoff: () => 0,
      connect_timeout: 5,
      fetch_types: types === undefined,
      ...more,
    })
    if (types === undefined) fetching.add(client)
    else giveTypes(client, types)
    return client
  }

  function giveTypes(client: Client, known: ArrayTypes): void {
    const o = client.options as unknown as ClientOptions
    o.fetch_types = false
    Object.assign(o.parsers, known.parsers)
    Object.assign(o.serializers, known.serializers)
    Object.assign(o.shared.typeArrayMap, known.typeArrayMap)
  }

  /**
   * After a client's first answer, its connection has fetched the array types: they are kept, and no
   * client connects with a fetch of its own from now on (a connection already starting still does).
   */
  function learnTypes(client: Client): void {
    if (types !== undefined || !fetching.has(client)) return
    const o = client.options as unknown as ClientOptions
    types = { parsers: { ...o.parsers }, serializers: { ...o.serializers }, typeArrayMap: { ...o.shared.typeArrayMap } }
    for (const c of fetching) giveTypes(c, types)
    fetching.clear()
  }

  const closedError = () => unavailable(Object.assign(new Error('the database was closed'), { code: 'CONNECTION_ENDED' }))

  /** Statements handed to a client that the driver has not settled (answered or failed) yet. */
  const unsettled = new Map<Client, number>()
  /** Run when a client has no unsettled statement left. */
  const onSettled = new Map<Client, () => void>()
  /** Clients being ended, until they are. */
  const ending = new Set<Promise<void>>()

  /** Resolves true once no statement handed to client is unsettled, or false after seconds. */
  function settledWithin(client: Client, seconds: number): Promise<boolean> {
    return new Promise((resolve) => {
      if ((unsettled.get(client) ?? 0) === 0) return resolve(true)
      const timer = setTimeout(() => resolve(false), seconds * 1000)
      onSettled.set(client, () => {
        clearTimeout(timer)
        onSettled.delete(client)
        resolve(true)
      })
    })
  }

  // close() ends the connections again (the driver has it; its type declarations leave it out). It
  // is not waited for: it waits for every connection to end, and one that is not open may never.
  const closeAgain = (client: Client) => (client as unknown as { close(): Promise<void> }).close().catch(() => {})

  /**
   * Ends client for good once no statement handed to it is left, or at the latest after seconds, when
   * it is destroyed and what it still has fails. If the driver reconnected for some of that all the
   * same (see the header), its connections are closed again once it is settled, and after seconds
   * more if it is not by then, and again once it is.
   */
  async function end(client: Client, seconds: number): Promise<void> {
    fetching.delete(client)
    await settledWithin(client, seconds)
    await client.end({ timeout: 0 }).catch(() => {})
    const settled = await settledWithin(client, seconds)
    void closeAgain(client)
    // A connection closed while the driver still queued statements would be reconnected for them.
    if (!settled) {
      onSettled.set(client, () => {
        onSettled.delete(client)
        void closeAgain(client)
      })
    }
  }

  /** end(client), remembered until it is done, so that close() waits for a retired client too. */
  function finish(client: Client, seconds: number): Promise<void> {
    const done = end(client, seconds)
    ending.add(done)
    done.then(() => ending.delete(done))
    return done
  }

  function retire(client: Client): void {
    void finish(client, RETIRE_SECONDS)
  }

  function settle(client: Client): void {
    const n = (unsettled.get(client) ?? 1) - 1
    if (n > 0) unsettled.set(client, n)
    else {
      unsettled.delete(client)
      onSettled.get(client)?.()
    }
    if (client === statements) handOut()
  }

  /** One statement on client, answered within noAnswerMs or failed; prepared when it has parameters. */
  async function send<T>(client: Client, text: string, params: unknown[]): Promise<T[]> {
    let timer: ReturnType<typeof setTimeout> | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(noAnswer(noAnswerMs)), noAnswerMs)
    })
    unsettled.set(client, (unsettled.get(client) ?? 0) + 1)
    const query = client.unsafe(text, params as Params, { prepare: params.length > 0 })
    // The driver's promise, not the race below: a statement given up on may still be running.
    query.then(
      () => settle(client),
      () => settle(client),
    )
    try {
      const rows = (await Promise.race([query, late])) as unknown as T[]
      learnTypes(client)
      return rows
    } finally {
      clearTimeout(timer)
    }
  }

  // --- single statements: one pool, replaced by a fresh one when it loses a connection ---
  const statementMax = Math.max(1, max - transactionMax)
  // max_pipeline is an option of the driver (src/index.js) that its type declarations leave out.
  const statementOptions = (options.maxPipeline === undefined ? {} : { max_pipeline: options.maxPipeline }) as ClientMore
  let statements = newClient(statementMax, statementOptions)
  /** Statements the current statement client may have at once: what its connections hold. */
  const room = statementMax * (Math.max(0, options.maxPipeline ?? DRIVER_PIPELINE) + 1)
  /** Statements waiting for room, in order. */
  const queued: (() => void)[] = []

  const hasRoom = () => (unsettled.get(statements) ?? 0) < room

  /** Hands waiting statements to the current client while it has room (send counts each at once). */
  function handOut(): void {
    while (queued.length > 0 && hasRoom()) queued.shift()?.()
  }

  function statement<T>(text: string, params: unknown[]): Promise<T[]> {
    if (closed || (queued.length === 0 && hasRoom())) return run<T>(text, params)
    return new Promise<T[]>((resolve, reject) => queued.push(() => run<T>(text, params).then(resolve, reject)))
  }

  async function run<T>(text: string, params: unknown[]): Promise<T[]> {
    if (closed) throw closedError()
    const client = statements
    try {
      return await send<T>(client, text, params)
    } catch (err) {
      if (isDbUnavailable(err) && client === statements && !closed) {
        statements = newClient(statementMax, statementOptions)
        retire(client)
      }
      throw unavailable(err)
    } finally {
      handOut()
    }
  }

  // --- transactions: clients of one connection, one transaction at a time each ---
  interface Lane {
    client: Client
    /** Counts the closes of the lane's connection: a transaction whose connection closed is over. */
    closes: number
    /** closes when the lane was last released. */
    released: number
  }
  const newLane = (): Lane => {
    const lane: Lane = { client: undefined as unknown as Client, closes: 0, released: 0 }
    lane.client = newClient(1, {
      max_lifetime: null,
      onclose: () => {
        lane.closes++
      },
    })
    return lane
  }
  const idle: Lane[] = Array.from({ length: transactionMax }, newLane)
  const lanes = new Set(idle)
  const waiting: ((lane: Lane) => void)[] = []

  const renew = (lane: Lane): Lane => {
    lanes.delete(lane)
    retire(lane.client)
    const fresh = newLane()
    lanes.add(fresh)
    return fresh
  }
  const acquire = (): Promise<Lane> => {
    const lane = idle.pop()
    return lane !== undefined ? Promise.resolve(lane) : new Promise((resolve) => waiting.push(resolve))
  }
  const release = (lane: Lane): void => {
    const next = waiting.shift()
    if (next) next(lane)
    else idle.push(lane)
  }

  async function transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    let lane = await acquire()
    if (closed) {
      release(lane)
      throw closedError()
    }
    // Its connection closed while idle (the server restarted, say): a fresh client, as below.
    if (lane.closes !== lane.released) lane = renew(lane)
    const closes = lane.closes
    let lost = false
    const run = async <R>(text: string, params: unknown[] = []): Promise<R[]> => {
      // A connection that closed took its transaction with it: nothing more may run as part of it.
      if (lost || lane.closes !== closes) {
        lost = true
        throw unavailable(Object.assign(new Error('the connection closed during the transaction'), { code: 'CONNECTION_CLOSED' }))
      }
      try {
        return await send<R>(lane.client, text, params)
      } catch (err) {
        if (isDbUnavailable(err)) lost = true
        throw unavailable(err)
      }
    }
    try {
      await run('BEGIN')
      const result = await fn({ query: run })
      await run('COMMIT')
      return result
    } catch (err) {
      if (!lost) {
        await run('ROLLBACK').catch(() => {
          lost = true
        })
      }
      throw err
    } finally {
      // A lost connection is not reconnected (see above): the lane gets a fresh client.
      if (!closed && (lost || lane.closes !== closes)) lane = renew(lane)
      lane.released = lane.closes
      release(lane)
    }
  }

  return {
    query: <T>(text: string, params: unknown[] = []) => statement<T>(text, params),
    transaction,
    async close() {
      closed = true
      // Statements still waiting for room fail at once (ERR_DB_UNAVAILABLE), as new ones do.
      for (const wake of queued.splice(0)) wake()
      await Promise.all([finish(statements, CLOSE_SECONDS), ...[...lanes].map((l) => finish(l.client, CLOSE_SECONDS)), ...ending])
    },
  }
}
