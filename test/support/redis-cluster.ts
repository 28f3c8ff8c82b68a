// A real Redis Cluster for tests: one redis-server with cluster mode on, holding every slot, on a free
// loopback port. Stopped by its pid; its directory is removed.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Cluster, Redis } from 'ioredis'
import { startRedis } from './redis-server.js'

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
