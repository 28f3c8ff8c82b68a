// Real Redis Clusters for tests, on free loopback ports, each node stopped by its pid and its directory
// removed: one redis-server with cluster mode on holding every slot (startSingleNodeCluster), and six
// nodes, three masters with a replica each, for failovers (startSixNodeCluster).
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Cluster, Redis } from 'ioredis'
import { until as untilWithin } from '../../scripts/lib/until.js'
import { type RedisServer, startRedis } from './redis-server.js'

export interface TestCluster {
  cluster: Cluster
  stop(): Promise<void>
}

export async function startSingleNodeCluster(): Promise<TestCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'anteroom-cluster-'))
  const server = await startRedis([
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    'nodes.conf',
    '--dir',
    dir,
    '--cluster-announce-ip',
    '127.0.0.1',
  ])
  const admin = new Redis(server.url)
  await admin.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383')
  for (let i = 0; i < 100 && !(await admin.call('CLUSTER', 'INFO'))?.toString().includes('cluster_state:ok'); i++) {
    await new Promise((r) => setTimeout(r, 50))
  }
  admin.disconnect()
  const cluster = new Cluster([{ host: '127.0.0.1', port: server.port }])
  return {
    cluster,
    async stop() {
      cluster.disconnect()
      await server.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** One node of a six-node cluster: its server (stopped by pid) and its directory. */
export interface ClusterNode {
  server: RedisServer
  port: number
  dir: string
}

export interface SixNodeCluster {
  nodes: ClusterNode[]
  /** `redis+cluster://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3`: what an edge is configured with (three seeds). */
  url: string
  /** The port of the master that serves `slot` now. */
  masterOf(slot: number): Promise<number>
  /** CLUSTER KEYSLOT of a key, asked of a live node. */
  keySlot(key: string): Promise<number>
  /** A live node's port, for commands that any node answers. */
  anyLivePort(): number
  /**
   * Kills the master on `port` (SIGKILL by pid) and resolves once its replica has been promoted and every
   * live node reports cluster_state:ok with the slot served by the new master. Returns the measured times.
   * `afterKill` runs as soon as the master is dead (a lossy failover test thaws its frozen replica there).
   */
  failMaster(port: number, options?: { afterKill?: () => void }): Promise<ClusterFailover>
  /** The port of the replica of the master on `port`. */
  replicaOf(port: number): Promise<number>
  /** Ports of the nodes that were killed. */
  dead: ReadonlySet<number>
  stop(): Promise<void>
}

export interface ClusterFailover {
  oldPort: number
  newPort: number
  /** From the kill until the replica answered ROLE as master, ms. */
  promotedMs: number
  /** From the kill until every live node said cluster_state:ok again with the new master in its slot map, ms. */
  stateOkMs: number
}

/** How long a node may be unreachable before the cluster calls it failed (Redis's default is 15 s). */
export const CLUSTER_NODE_TIMEOUT_MS = 1000

/** Polls (scripts/lib/until.ts) for at most 30 s: a cluster's start and failover take longer than a single server's. */
const until = (what: string, check: () => Promise<boolean>) => untilWithin(what, check, 30_000)

async function ask(port: number, ...args: string[]): Promise<unknown> {
  const c = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 500,
  })
  c.on('error', () => {})
  try {
    await c.connect()
    return await c.call(args[0] as string, ...args.slice(1))
  } finally {
    c.disconnect()
  }
}

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString()
    })
    child.stderr?.on('data', (d: Buffer) => {
      out += d.toString()
    })
    child.once('error', reject)
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} exited with ${code}: ${out}`))))
  })
}

/** The master port that serves each slot range, from CLUSTER SLOTS of one node. */
async function slotMap(port: number): Promise<{ from: number; to: number; master: number }[]> {
  const slots = (await ask(port, 'CLUSTER', 'SLOTS')) as [number, number, [string, number, ...unknown[]]][]
  return slots.map(([from, to, m]) => ({ from, to, master: Number(m[1]) }))
}

/**
 * Each master's port and its replicas' ports, from CLUSTER NODES of one node (CLUSTER SLOTS leaves out a
 * replica until its replication offset has moved, which takes the first replication PING, 10 s).
 */
async function replicasOf(port: number): Promise<Map<number, number[]>> {
  const lines = String(await ask(port, 'CLUSTER', 'NODES'))
    .trim()
    .split('\n')
  const rows = lines.map((line) => {
    const [id, addr, flags, masterId] = line.split(' ') as [string, string, string, string]
    return { id, port: Number(/:(\d+)@/.exec(addr)?.[1]), flags: flags.split(','), masterId }
  })
  const out = new Map<number, number[]>()
  for (const m of rows.filter((r) => r.flags.includes('master') && !r.flags.includes('fail'))) {
    out.set(
      m.port,
      rows.filter((r) => r.masterId === m.id && !r.flags.includes('fail')).map((r) => r.port),
    )
  }
  return out
}

/**
 * Three masters and three replicas (`redis-cli --cluster create ... --cluster-replicas 1`), each
 * redis-server with cluster mode on in its own directory, on free loopback ports, with a node timeout of
 * CLUSTER_NODE_TIMEOUT_MS and cluster-require-full-coverage off. Resolves when every node says cluster_state:ok and every replica is in sync.
 */
export async function startSixNodeCluster(): Promise<SixNodeCluster> {
  const nodes: ClusterNode[] = []
  const dead = new Set<number>()
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    for (const n of nodes) {
      if (!dead.has(n.port)) await n.server.stop()
      rmSync(n.dir, { recursive: true, force: true })
    }
  }
  try {
    for (let i = 0; i < 6; i++) {
      const dir = mkdtempSync(join(tmpdir(), `anteroom-cluster6-${i}-`))
      const server = await startRedis([
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        'nodes.conf',
        '--cluster-node-timeout',
        String(CLUSTER_NODE_TIMEOUT_MS),
        // While one master fails over, the others keep serving their slots (the default, yes, makes every
        // node answer CLUSTERDOWN from the moment the master is marked failed until its replica takes over:
        // about 0.7 s here). docs/architecture.md recommends the same.
        '--cluster-require-full-coverage',
        'no',
        '--cluster-announce-ip',
        '127.0.0.1',
        // A replica's first sync starts at once (Redis waits 5 s by default for more replicas to join it).
        '--repl-diskless-sync-delay',
        '0',
        '--dir',
        dir,
      ])
      nodes.push({ server, port: server.port, dir })
    }
    await run('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '1', '--cluster-yes'])
    await until('six nodes with cluster_state:ok, three masters with a replica each, replicas in sync', async () => {
      for (const n of nodes) {
        const info = String(await ask(n.port, 'CLUSTER', 'INFO'))
        if (!info.includes('cluster_state:ok') || !info.includes('cluster_known_nodes:6')) return false
      }
      const topology = await replicasOf(nodes[0]?.port as number)
      if (topology.size !== 3 || [...topology.values()].some((rs) => rs.length !== 1)) return false
      for (const [replica] of topology.values()) {
        if (!/master_link_status:up/.test(String(await ask(replica as number, 'INFO', 'replication')))) return false
      }
      return true
    })
  } catch (err) {
    await stop()
    throw err
  }
  const live = () => nodes.filter((n) => !dead.has(n.port))
  const anyLivePort = () => live()[0]?.port as number
  const masterOf = async (slot: number) => {
    const range = (await slotMap(anyLivePort())).find((r) => r.from <= slot && slot <= r.to)
    if (range === undefined) throw new Error(`slot ${slot} is not served`)
    return range.master
  }
  return {
    nodes,
    url: `redis+cluster://${nodes
      .slice(0, 3)
      .map((n) => `127.0.0.1:${n.port}`)
      .join(',')}`,
    masterOf,
    async keySlot(key) {
      return Number(await ask(anyLivePort(), 'CLUSTER', 'KEYSLOT', key))
    },
    anyLivePort,
    dead,
    async replicaOf(port) {
      const replica = (await replicasOf(anyLivePort())).get(port)?.[0]
      if (replica === undefined) throw new Error(`node ${port} is not a master with a replica`)
      return replica
    },
    async failMaster(port, options = {}) {
      const node = nodes.find((n) => n.port === port)
      if (node === undefined) throw new Error(`no node on port ${port}`)
      const range = (await slotMap(port)).find((r) => r.master === port)
      const replica = (await replicasOf(port)).get(port)?.[0]
      if (range === undefined || replica === undefined) throw new Error(`node ${port} is not a master with a replica`)
      const t0 = Date.now()
      await node.server.stop() // SIGKILL by pid, then waits for the exit
      dead.add(port)
      options.afterKill?.()
      await until(`the replica on ${replica} promoted`, async () => ((await ask(replica, 'ROLE')) as unknown[])[0] === 'master')
      const promotedMs = Date.now() - t0
      await until('cluster_state:ok on every live node, the slot served by the promoted replica', async () => {
        for (const n of live()) {
          if (!String(await ask(n.port, 'CLUSTER', 'INFO')).includes('cluster_state:ok')) return false
          const served = (await slotMap(n.port)).find((r) => r.from <= range.from && range.from <= r.to)
          if (served?.master !== replica) return false
        }
        return true
      })
      return { oldPort: port, newPort: replica, promotedMs, stateOkMs: Date.now() - t0 }
    },
    stop,
  }
}
