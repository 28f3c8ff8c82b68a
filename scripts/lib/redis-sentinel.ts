// A real Redis Sentinel set, for the tests and the simulator's failover sale: a primary, a replica
// (--replicaof) and three redis-sentinel processes (Debian's redis-sentinel; quorum 2, down-after 1 s),
// each on a free loopback port and in its own temporary directory (Sentinel rewrites its config file; a
// replica writes its sync's RDB). Everything is stopped by pid and the directories are removed. Killing
// the primary is a SIGKILL by pid; the sentinels then elect a leader and promote the replica, which the
// functions below wait for by polling, bounded.
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { freePort } from './free-port.js'
import { type RedisServer, startRedis } from './redis-server.js'
import { until } from './until.js'

/** The poll the failover waits with, for the tests that import it from here. */
export { until }

export const MASTER_NAME = 'anteroom'

export interface SentinelProcess {
  port: number
  pid: number
  stop(): Promise<void>
}

export interface TestSentinelSet {
  /** The data nodes, primary first as started; after a failover the roles have changed (see `master()`). */
  nodes: RedisServer[]
  sentinels: SentinelProcess[]
  /** `redis+sentinel://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3/anteroom`: what an edge is configured with. */
  url: string
  /** The port the sentinels currently name as the master (asks one that answers). */
  master(): Promise<number>
  /** The data node that serves the master's port. */
  nodeAt(port: number): RedisServer
  /** A client to the current master (the caller disconnects it). */
  masterClient(): Promise<Redis>
  /** A client to a data node by port (the caller disconnects it). */
  nodeClient(port: number): Redis
  /**
   * Kills the current master (SIGKILL by pid) and resolves once every sentinel names another node as
   * master and that node answers as a master. Returns the old and new ports and the measured times.
   * `afterKill` runs as soon as the master is dead (a lossy failover test thaws its frozen replica there).
   */
  killMaster(options?: { afterKill?: () => void }): Promise<Failover>
  /**
   * Freezes the current master (SIGSTOP by pid: its connections stay open, nothing answers, as in a
   * partition) and resolves once the sentinels have promoted another node. `thaw()` resumes the old one,
   * which the sentinels then turn into a replica of the new master.
   */
  freezeMaster(options?: { afterFreeze?: () => void }): Promise<Failover & { thaw(): Promise<void> }>
  /** Waits (bounded) until every sentinel names `port` master and knows the other two sentinels. */
  settled(): Promise<void>
  stop(): Promise<void>
}

export interface Failover {
  oldPort: number
  newPort: number
  /** From the kill until the first sentinel named the new master, ms. */
  sentinelsSwitchedMs: number
  /** From the kill until the new master answered ROLE as master, ms. */
  promotedMs: number
}

const DOWN_AFTER_MS = 1000
const FAILOVER_TIMEOUT_MS = 3000

function quickClient(port: number): Redis {
  const c = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 500,
  })
  c.on('error', () => {})
  return c
}

/** Runs one command on a fresh connection to 127.0.0.1:port and closes it. */
export async function ask(port: number, ...args: (string | number)[]): Promise<unknown> {
  const c = quickClient(port)
  try {
    await c.connect()
    return await c.call(String(args[0]), ...args.slice(1).map(String))
  } finally {
    c.disconnect()
  }
}

async function startSentinel(masterPort: number): Promise<SentinelProcess> {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'anteroom-sentinel-'))
  const conf = join(dir, 'sentinel.conf')
  writeFileSync(
    conf,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      'daemonize no',
      `dir ${dir}`,
      'logfile ""',
      `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${masterPort} 2`,
      `sentinel down-after-milliseconds ${MASTER_NAME} ${DOWN_AFTER_MS}`,
      `sentinel failover-timeout ${MASTER_NAME} ${FAILOVER_TIMEOUT_MS}`,
      `sentinel parallel-syncs ${MASTER_NAME} 1`,
      '',
    ].join('\n'),
  )
  const child: ChildProcess = spawn('redis-sentinel', [conf], { stdio: ['ignore', 'ignore', 'ignore'] })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const pid = child.pid as number
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      process.kill(pid, 'SIGKILL')
      await exited
    }
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    await until(`redis-sentinel on port ${port}`, async () => {
      if (child.exitCode !== null) throw new Error('redis-sentinel exited')
      return Array.isArray(await ask(port, 'SENTINEL', 'get-master-addr-by-name', MASTER_NAME))
    })
  } catch (err) {
    await stop()
    throw err
  }
  return { port, pid, stop }
}

/** Sentinel answers are flat [key, value, key, value, ...] lists. */
function record(flat: unknown): Record<string, string> {
  const out: Record<string, string> = {}
  const list = flat as string[]
  for (let i = 0; i + 1 < list.length; i += 2) out[String(list[i])] = String(list[i + 1])
  return out
}

export async function startSentinelSet(): Promise<TestSentinelSet> {
  const started: { stop(): Promise<void> }[] = []
  // Each data node in its own directory: a replica writes the RDB of its full sync there, and a node
  // started in the same directory later would load it.
  const dirs = [0, 1].map((i) => mkdtempSync(join(tmpdir(), `anteroom-sentinel-node${i}-`)))
  started.push({
    stop: async () => {
      for (const d of dirs) rmSync(d, { recursive: true, force: true })
    },
  })
  try {
    // A replica's first sync starts at once (Redis waits 5 s by default for more replicas to join it).
    const node = (i: number) => ['--dir', dirs[i] as string, '--repl-diskless-sync-delay', '0']
    const primary = await startRedis(node(0))
    started.push(primary)
    const replica = await startRedis([...node(1), '--replicaof', '127.0.0.1', String(primary.port)])
    started.push(replica)
    const nodes = [primary, replica]
    await until('the replica in sync', async () => /master_link_status:up/.test(String(await ask(replica.port, 'INFO', 'replication'))))
    const sentinels: SentinelProcess[] = []
    for (let i = 0; i < 3; i++) {
      const s = await startSentinel(primary.port)
      sentinels.push(s)
      started.push(s)
    }
    const set = makeSet(nodes, sentinels, dirs)
    await set.settled()
    return set
  } catch (err) {
    for (const s of started.reverse()) await s.stop()
    throw err
  }
}

function makeSet(nodes: RedisServer[], sentinels: SentinelProcess[], dirs: string[]): TestSentinelSet {
  const dead = new Set<number>()
  const frozen = new Set<number>()
  let stopped = false
  const masterFrom = async (port: number) => {
    const addr = (await ask(port, 'SENTINEL', 'get-master-addr-by-name', MASTER_NAME)) as [string, string]
    return Number(addr[1])
  }
  const master = async () => {
    let last: unknown
    for (const s of sentinels) {
      try {
        return await masterFrom(s.port)
      } catch (err) {
        last = err
      }
    }
    throw new Error(`no sentinel answered: ${String(last)}`)
  }
  const nodeAt = (port: number) => {
    const node = nodes.find((n) => n.port === port)
    if (node === undefined) throw new Error(`no data node on port ${port}`)
    return node
  }
  const isMaster = async (port: number) => {
    const role = (await ask(port, 'ROLE')) as unknown[]
    return role[0] === 'master'
  }
  const settled = async () => {
    const want = await master()
    await until(
      'sentinels agreeing on the master, knowing each other and the replica',
      async () => {
        for (const s of sentinels) {
          if ((await masterFrom(s.port)) !== want) return false
          const others = (await ask(s.port, 'SENTINEL', 'sentinels', MASTER_NAME)) as unknown[]
          if (others.length !== sentinels.length - 1) return false
          const replicas = ((await ask(s.port, 'SENTINEL', 'replicas', MASTER_NAME)) as unknown[]).map(record)
          const live = replicas.filter((r) => !dead.has(Number(r.port)) && !/s_down|disconnected/.test(r.flags ?? ''))
          if (live.length < nodes.length - dead.size - 1) return false
        }
        return isMaster(want)
      },
      30_000,
    )
  }
  return {
    nodes,
    sentinels,
    url: `redis+sentinel://${sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}/${MASTER_NAME}`,
    master,
    nodeAt,
    async masterClient() {
      const c = new Redis({ host: '127.0.0.1', port: await master(), maxRetriesPerRequest: 0 })
      c.on('error', () => {})
      return c
    },
    nodeClient(port) {
      const c = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 0 })
      c.on('error', () => {})
      return c
    },
    async killMaster(options = {}) {
      const oldPort = await master()
      const node = nodeAt(oldPort)
      const t0 = Date.now()
      await node.stop() // SIGKILL by pid, then waits for the exit
      dead.add(oldPort)
      options.afterKill?.()
      return switched(oldPort, t0)
    },
    async freezeMaster(options = {}) {
      const oldPort = await master()
      const node = nodeAt(oldPort)
      const t0 = Date.now()
      process.kill(node.pid, 'SIGSTOP')
      frozen.add(node.pid)
      options.afterFreeze?.()
      const failover = await switched(oldPort, t0)
      return {
        ...failover,
        async thaw() {
          if (frozen.delete(node.pid)) process.kill(node.pid, 'SIGCONT')
        },
      }
    },
    settled,
    async stop() {
      if (stopped) return
      stopped = true
      for (const pid of frozen) process.kill(pid, 'SIGCONT')
      frozen.clear()
      for (const s of sentinels) await s.stop()
      for (const n of nodes) if (!dead.has(n.port)) await n.stop()
      for (const d of dirs) rmSync(d, { recursive: true, force: true })
    },
  }
  /** Waits until every sentinel names a master other than `oldPort` and it answers as master. */
  async function switched(oldPort: number, t0: number): Promise<Failover> {
    let sentinelsSwitchedMs = -1
    let newPort = oldPort
    await until(
      'a new master named by every sentinel',
      async () => {
        const named = await Promise.all(sentinels.map((s) => masterFrom(s.port).catch(() => oldPort)))
        if (sentinelsSwitchedMs < 0 && named.some((p) => p !== oldPort)) sentinelsSwitchedMs = Date.now() - t0
        if (!named.every((p) => p === named[0] && p !== oldPort)) return false
        newPort = named[0] as number
        return true
      },
      30_000,
    )
    await until('the new master answering as master', () => isMaster(newPort))
    return { oldPort, newPort, sentinelsSwitchedMs, promotedMs: Date.now() - t0 }
  }
}
