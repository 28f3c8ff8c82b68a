// Starts a real PostgreSQL server (a throwaway cluster in a fresh temp directory, on a free loopback port)
// for the bench, the simulator and the tests, and stops it again. The postmaster is our own child process:
// as root it runs as the `postgres` system user (initdb and postgres refuse to run as root), otherwise as
// the current user.
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process'
import { closeSync, existsSync, openSync, readdirSync } from 'node:fs'
import { chown, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import postgres from 'postgres'
import { freePort } from './free-port.js'

const execFileAsync = promisify(execFile)

export interface PostgresServer {
  port: number
  /** postgres://postgres@127.0.0.1:<port>/anteroom */
  url: string
  /** pid of the postmaster (a new one after a restart) */
  readonly pid: number
  /** the temp directory holding the cluster (`data/`), the unix socket and `postgres.log` */
  dataDir: string
  /**
   * Stops the postmaster (fast shutdown: open transactions are rolled back and clients disconnected),
   * runs `whileDown` once it has exited, if given, then starts it again on the same port and data
   * directory (also when `whileDown` threw) and resolves when it accepts connections, to the new
   * postmaster's pid.
   */
  restart(whileDown?: () => Promise<void>): Promise<number>
  stop(): Promise<void>
}

/** The directory holding initdb and postgres: PostgreSQL 15 if present, else the newest installed, else pg_config's. */
export function postgresBinDir(): string {
  const root = '/usr/lib/postgresql'
  const has = (dir: string) => existsSync(join(dir, 'postgres')) && existsSync(join(dir, 'initdb'))
  if (has(`${root}/15/bin`)) return `${root}/15/bin`
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => /^\d+$/.test(v) && has(`${root}/${v}/bin`))
        .sort((a, b) => Number(b) - Number(a))
    : []
  if (versions[0]) return `${root}/${versions[0]}/bin`
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    if (has(dir)) return dir
  } catch {}
  throw new Error('no PostgreSQL server binaries found (install them with: apt-get install postgresql)')
}

/** uid/gid to run the server as: the `postgres` system user when we are root, else ourselves (undefined). */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim())
  return { uid: id('-u'), gid: id('-g') }
}

export async function startPostgres(): Promise<PostgresServer> {
  const bin = postgresBinDir()
  const user = serverUser()
  const dataDir = await mkdtemp(join(tmpdir(), 'anteroom-pg-'))
  const data = join(dataDir, 'data')
  const log = join(dataDir, 'postgres.log')
  // Both run with the temp dir as cwd: the postgres user may not be able to read ours.
  const as = { cwd: dataDir, ...(user ?? {}) }
  let child: ChildProcess | undefined
  let stopped = false
  try {
    if (user) await chown(dataDir, user.uid, user.gid)
    await mkdir(data, { mode: 0o700 })
    if (user) await chown(data, user.uid, user.gid)
    // --no-locale: C collation regardless of the machine's LANG (which may name a locale that is not installed).
    const initdbArgs = ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale', '--no-sync']
    await execFileAsync(join(bin, 'initdb'), initdbArgs, as).catch((err: { stderr?: string; message: string }) => {
      throw new Error(`initdb failed: ${err.stderr || err.message}`)
    })

    const port = await freePort()
    const settings = {
      listen_addresses: '127.0.0.1',
      unix_socket_directories: dataDir,
      fsync: 'off',
      synchronous_commit: 'off',
      full_page_writes: 'off',
      max_connections: '200',
    }
    const args = ['-D', data, '-p', String(port), ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])]
    // If the test process dies without running stop(), take the postmaster down with it (immediate shutdown).
    const onExit = () => {
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGQUIT')
    }
    process.once('exit', onExit)

    /** Starts the postmaster on the data directory and port; resolves with its pid once it accepts connections. */
    const launch = async (): Promise<number> => {
      const logFd = openSync(log, 'a')
      const proc = spawn(join(bin, 'postgres'), args, { ...as, stdio: ['ignore', logFd, logFd] })
      closeSync(logFd)
      child = proc
      return waitForPostmaster(proc, data, port, log)
    }
    /** Fast shutdown: roll back open transactions, disconnect clients, checkpoint; SIGQUIT after 10 s. */
    const halt = async (): Promise<void> => {
      const proc = child
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return
      const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()))
      proc.kill('SIGINT')
      const timer = setTimeout(() => proc.kill('SIGQUIT'), 10_000)
      await exited
      clearTimeout(timer)
    }

    let pid = await launch()
    const url = `postgres://postgres@127.0.0.1:${port}/anteroom`
    const admin = postgres(`postgres://postgres@127.0.0.1:${port}/postgres`, { max: 1, onnotice: () => {} })
    try {
      await admin`create database anteroom`
    } finally {
      await admin.end({ timeout: 5 })
    }

    return {
      port,
      url,
      get pid() {
        return pid
      },
      dataDir,
      async restart(whileDown) {
        if (stopped) throw new Error('the PostgreSQL server was stopped')
        await halt()
        try {
          await whileDown?.()
        } finally {
          pid = await launch()
        }
        return pid
      },
      async stop() {
        stopped = true
        process.removeListener('exit', onExit)
        await halt()
        await rm(dataDir, { recursive: true, force: true })
      },
    }
  } catch (err) {
    if (child && child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((resolve) => child?.once('exit', resolve))
      child.kill('SIGQUIT')
      await gone
    }
    await rm(dataDir, { recursive: true, force: true })
    throw err
  }
}

/** Waits until the postmaster accepts connections; returns its pid. */
async function waitForPostmaster(child: ChildProcess, data: string, port: number, log: string): Promise<number> {
  const probeUrl = `postgres://postgres@127.0.0.1:${port}/postgres`
  let lastError: unknown
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null || child.signalCode !== null) break
    const probe = postgres(probeUrl, { max: 1, connect_timeout: 2, onnotice: () => {} })
    try {
      await probe`select 1`
    } catch (err) {
      lastError = err
      await new Promise((r) => setTimeout(r, 25))
      continue
    } finally {
      await probe.end({ timeout: 1 })
    }
    // The first line of postmaster.pid is the postmaster's pid: it must be our child, not a stranger on the port.
    const pid = Number((await readFile(join(data, 'postmaster.pid'), 'utf8')).split('\n')[0])
    if (pid !== child.pid) throw new Error(`postmaster.pid says ${pid}, but we started ${child.pid}`)
    return pid
  }
  const tail = (await readFile(log, 'utf8').catch(() => '')).split('\n').slice(-20).join('\n')
  throw new Error(`postgres did not start on port ${port} (${String(lastError)}):\n${tail}`)
}
