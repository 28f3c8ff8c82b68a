// Starts a real redis-server on a free loopback port, and stops it by pid: for the bench, the simulator,
// npm run dev:worker and the tests.
import { type ChildProcess, spawn } from 'node:child_process'
import { Redis } from 'ioredis'
import { freePort } from './free-port.js'

export interface RedisServer {
  port: number
  url: string
  pid: number
  stop(): Promise<void>
}

export async function startRedis(extraArgs: string[] = [], fixedPort?: number): Promise<RedisServer> {
  const port = fixedPort ?? (await freePort())
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'yes', ...extraArgs],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const url = `redis://127.0.0.1:${port}`
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  probe.on('error', () => {})
  for (let i = 0; ; i++) {
    try {
      await probe.connect()
      await probe.ping()
      break
    } catch (err) {
      if (i > 100 || child.exitCode !== null) {
        child.kill('SIGKILL')
        throw new Error(`redis-server did not start on port ${port}: ${String(err)}`)
      }
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  probe.disconnect()
  const pid = child.pid as number
  return {
    port,
    url,
    pid,
    async stop() {
      if (child.exitCode === null) {
        process.kill(pid, 'SIGKILL')
        await exited
      }
    },
  }
}
