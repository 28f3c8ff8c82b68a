// Serving from several processes (ANTEROOM_PROCESSES): one Node process uses one core, so on a machine
// with more the primary forks that many workers (node:cluster), each a whole instance of the entry that
// forked it. They are instances like any others over one Redis and one PostgreSQL (the edges are
// stateless, the lane's allocators take turns by lease), so nothing is shared between them but the
// listening sockets, the settings the primary made up for them (./node.ts), and the primary's watch.
//
// Each worker accepts its own connections from the shared socket (SCHED_NONE): with node:cluster's
// default (round robin) the primary accepts every connection and hands it over, which cost more CPU a
// connection than two processes gained in a 2,000-connection rush (bench measurement 7).
//
// A worker that exits on its own is started again after RESTART_DELAY_MS, under the same index; one
// index exiting more than MAX_RESTARTS times within RESTART_WINDOW_MS is a crash loop, and the primary
// stops them all and exits 1. SIGTERM or SIGINT to the primary is passed on as SIGTERM; it exits 0 once
// every worker has. A worker still there after STOP_GRACE_MS, or a second signal, gets SIGKILL.
import cluster, { type Worker } from 'node:cluster'
import type { Log } from '../core/log.js'

/** The worker's index (0, 1, ...) in its environment: for logs, and for tests. */
export const WORKER_ENV = 'ANTEROOM_WORKER'

export const RESTART_DELAY_MS = 500
export const MAX_RESTARTS = 5
export const RESTART_WINDOW_MS = 60_000
export const STOP_GRACE_MS = 10_000

export interface PrimaryOptions {
  processes: number
  /** Added to every worker's environment (settings made up once, for all of them). */
  env?: Record<string, string>
  /** The script the workers run; default: the one this process runs. */
  exec?: string
  log: Log
  restartDelayMs?: number
  /** How long a stopping worker may take before SIGKILL (default STOP_GRACE_MS). */
  stopGraceMs?: number
}

/** Whether this process is a worker forked by runPrimary. */
export const isWorker = (): boolean => cluster.isWorker

/**
 * Forks the workers and watches them until a signal stops them; resolves with the exit code for the
 * primary (0 after a signal, 1 after a crash loop).
 */
export function runPrimary(o: PrimaryOptions): Promise<number> {
  if (!Number.isInteger(o.processes) || o.processes < 1) throw new TypeError('processes must be a whole number of at least 1')
  cluster.schedulingPolicy = cluster.SCHED_NONE
  cluster.setupPrimary(o.exec === undefined ? {} : { exec: o.exec })
  const delay = o.restartDelayMs ?? RESTART_DELAY_MS
  const workers = new Map<Worker, number>()
  /** When each index last exited on its own, within the window. */
  const restarts = new Map<number, number[]>()
  let stopping = false
  let code = 0

  const fork = (index: number) => {
    const worker = cluster.fork({ ...o.env, [WORKER_ENV]: String(index) })
    workers.set(worker, index)
  }

  return new Promise<number>((resolve) => {
    const kill = () => {
      for (const w of workers.keys()) w.process.kill('SIGKILL')
    }
    const stop = (exitCode: number) => {
      if (stopping) return kill()
      stopping = true
      code = exitCode
      for (const w of workers.keys()) w.process.kill('SIGTERM')
      if (workers.size === 0) resolve(code)
      else setTimeout(kill, o.stopGraceMs ?? STOP_GRACE_MS).unref()
    }
    cluster.on('exit', (worker, exitCode, signal) => {
      const index = workers.get(worker)
      workers.delete(worker)
      if (stopping) {
        if (workers.size === 0) resolve(code)
        return
      }
      const now = Date.now()
      const exits = (restarts.get(index ?? 0) ?? []).filter((t) => t >= now - RESTART_WINDOW_MS)
      exits.push(now)
      restarts.set(index ?? 0, exits)
      const loop = exits.length > MAX_RESTARTS
      o.log(loop ? 'error' : 'warning', {
        message: loop ? 'workers keep exiting: stopping' : 'a worker exited: starting another',
        worker: index,
        pid: worker.process.pid,
        code: exitCode,
        signal,
      })
      if (loop) stop(1)
      else setTimeout(() => !stopping && fork(index ?? 0), delay)
    })
    // A second signal while stopping kills what is left.
    process.on('SIGTERM', () => stop(0))
    process.on('SIGINT', () => stop(0))
    for (let i = 0; i < o.processes; i++) fork(i)
  })
}
