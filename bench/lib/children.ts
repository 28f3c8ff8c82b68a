// Child servers of the bench, each started as `node --import tsx <script>` on a loopback port and stopped
// by its pid.
import { type ChildProcess, spawn } from 'node:child_process'
import { log, ROOT, sleep } from './common.js'
import { stopLoads } from './wrk.js'

export interface Child {
  name: string
  pid: number
  url: string
  /** The last few KB of the child's stdout and stderr, for error messages. */
  output(): string
  stop(): Promise<void>
}

const running = new Set<Child>()

export interface ChildOptions {
  name: string
  /** A .ts file, relative to the project root; run as `node [nodeArgs] --import tsx <script>`. */
  script: string
  port: number
  env: Record<string, string>
  /** Polled until it answers (any status). */
  readyPath: string
  /** Run under `node --cpu-prof`, writing the profile into <profileDir>/<slug of name> on exit. */
  profileDir?: string
  /** More flags for node (its workers, forked by node:cluster, run with them too). */
  nodeArgs?: string[]
}

/** Starts `node --import tsx <script>` bound to 127.0.0.1:<port> and waits until it answers HTTP. */
export async function startChild(o: ChildOptions): Promise<Child> {
  // A clean environment: nothing from the caller's ANTEROOM_* settings leaks into a server under test.
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('ANTEROOM_') && !k.startsWith('BENCH_')) env[k] = v
  Object.assign(env, o.env)
  const slug = o.name.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, '')
  const nodeArgs = [...(o.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${o.profileDir}/${slug}`] : []), ...(o.nodeArgs ?? [])]
  const proc: ChildProcess = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', o.script], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  if (proc.pid === undefined) throw new Error(`${o.name}: could not spawn`)
  const pid = proc.pid
  let tail = ''
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-8192)
  }
  proc.stdout?.on('data', keep)
  proc.stderr?.on('data', keep)
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()))
  const alive = () => proc.exitCode === null && proc.signalCode === null
  const url = `http://127.0.0.1:${o.port}`
  const child: Child = {
    name: o.name,
    pid,
    url,
    output: () => tail,
    async stop() {
      running.delete(child)
      if (!alive()) return
      process.kill(pid, 'SIGTERM')
      const done = await Promise.race([exited.then(() => true), sleep(5000).then(() => false)])
      if (!done && alive()) {
        process.kill(pid, 'SIGKILL')
        await exited
      }
    },
  }
  running.add(child)
  const deadline = Date.now() + 30_000
  for (;;) {
    if (!alive()) throw new Error(`${o.name} exited during start-up (code ${proc.exitCode}):\n${tail}`)
    try {
      const res = await fetch(url + o.readyPath, { signal: AbortSignal.timeout(1000) })
      await res.arrayBuffer()
      break
    } catch {
      if (Date.now() > deadline) {
        await child.stop()
        throw new Error(`${o.name} did not answer on ${url} within 30 s:\n${tail}`)
      }
      await sleep(100)
    }
  }
  log(`${o.name} is up on ${url} (pid ${pid})`)
  return child
}

/** Stops every child still running, one by one, each by its pid (the load generators first). */
export async function stopAllChildren(): Promise<void> {
  stopLoads()
  for (const child of [...running]) {
    try {
      await child.stop()
    } catch {
      // Already gone.
    }
  }
}
