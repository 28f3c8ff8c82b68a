// Real static-file origins for path tests: a document root with a protected file in it, served by a real
// server that resolves paths its own way. This file: the document root, the common interface, and Python's
// http.server (SimpleHTTPRequestHandler, as `python3 -m http.server` runs it) on a free loopback port,
// logging each request with where it resolved on disk and whether it carried Anteroom-Admission.
// Debian's nginx is in nginx.ts. Each server is our own child process, stopped by its pid.
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './redis-server.js'

export interface DocRoot {
  /** The temp directory: the document root (root/), logs and config. */
  dir: string
  /** The document root: shop/secret.txt, shop/index.html, public/hello.txt. */
  root: string
  /** Absolute path of shop/secret.txt. */
  secretFile: string
  /** Text only shop/secret.txt contains. */
  secret: string
  /** Text only shop/index.html contains. */
  index: string
  /** Text only public/hello.txt contains. */
  hello: string
}

/**
 * A fresh temp directory with a world-readable document root (an origin running as root may hand
 * requests to workers running as nobody).
 */
export async function makeDocRoot(prefix: string): Promise<DocRoot> {
  const dir = await mkdtemp(join(tmpdir(), `anteroom-${prefix}-`))
  const root = join(dir, 'root')
  const tag = () => randomBytes(8).toString('hex')
  const secret = `SECRET-${tag()}`
  const index = `SHOP-INDEX-${tag()}`
  const hello = `HELLO-PUBLIC-${tag()}`
  for (const d of [root, join(root, 'shop'), join(root, 'public')]) await mkdir(d, { recursive: true })
  await writeFile(join(root, 'shop/secret.txt'), `${secret}\n`)
  await writeFile(join(root, 'shop/index.html'), `<!doctype html><title>shop</title><p>${index}</p>\n`)
  await writeFile(join(root, 'public/hello.txt'), `${hello}\n`)
  for (const d of [dir, root, join(root, 'shop'), join(root, 'public')]) await chmod(d, 0o755)
  for (const f of ['shop/secret.txt', 'shop/index.html', 'public/hello.txt']) await chmod(join(root, f), 0o644)
  return { dir, root, secretFile: join(root, 'shop/secret.txt'), secret, index, hello }
}

/** One request as the origin logged it. */
export interface OriginHit {
  /** The request target as the origin received it (nginx $request_uri, http.server's self.path). */
  target: string
  /** The file the origin resolved it to (nginx $request_filename, http.server's translate_path). */
  file: string
  status: number
  /** Whether it carried an Anteroom-Admission header. */
  admitted: boolean
}

export interface StaticOrigin {
  name: 'nginx' | 'python'
  url: string
  port: number
  pid: number
  docs: DocRoot
  /** Every request the origin has logged so far, in order (without settle()'s own requests). */
  hits(): Promise<OriginHit[]>
  /**
   * Waits until every request the origin finished before this call is in hits(): sends a request of its
   * own straight to the origin and waits for its log line (bounded).
   */
  settle(): Promise<void>
  stop(): Promise<void>
}

const SENTINEL = 'anteroom-sentinel='
let sentinels = 0

/**
 * Reads a JSON-lines log, parsing each whole line with parse; sentinel lines are dropped, and reported
 * by the second value.
 */
export async function readLog(file: string, parse: (line: string) => OriginHit): Promise<{ hits: OriginHit[]; sentinels: string[] }> {
  const text = await readFile(file, 'utf8').catch(() => '')
  const hits: OriginHit[] = []
  const seen: string[] = []
  // Only whole lines: the text after the last newline is a line the origin is still writing.
  const lines = text.split('\n').slice(0, -1)
  for (const line of lines) {
    if (line.trim() === '') continue
    const hit = parse(line)
    if (hit.target.includes(SENTINEL)) seen.push(hit.target)
    else hits.push(hit)
  }
  return { hits, sentinels: seen }
}

/** settle() for an origin whose log is read by readLog. */
export async function settleLog(url: string, log: () => Promise<{ sentinels: string[] }>): Promise<void> {
  const target = `/public/hello.txt?${SENTINEL}${++sentinels}`
  const res = await fetch(`${url}${target}`)
  await res.arrayBuffer()
  for (let i = 0; ; i++) {
    if ((await log()).sentinels.includes(target)) return
    if (i > 200) throw new Error(`the origin at ${url} never logged ${target}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** Polls until GET /public/hello.txt answers 200 (bounded), or the process exits. */
export async function waitServing(url: string, child: ChildProcess, describe: () => Promise<string>): Promise<void> {
  for (let i = 0; ; i++) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`the origin exited (${child.exitCode ?? child.signalCode}): ${await describe()}`)
    try {
      const res = await fetch(`${url}/public/hello.txt`)
      await res.arrayBuffer()
      if (res.status === 200) return
    } catch {}
    if (i > 200) throw new Error(`the origin at ${url} did not come up: ${await describe()}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

/** Stops a child process by its pid (SIGTERM, then SIGKILL after a bounded wait) and waits for it to exit. */
export async function stopChild(child: ChildProcess, extraPids: () => number[] = () => []): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const others = extraPids()
  process.kill(child.pid as number, 'SIGTERM')
  const timer = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), 5_000).unref())
  if ((await Promise.race([exited, timer])) === 'late') {
    for (const pid of [child.pid as number, ...others]) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {}
    }
    await exited
  }
}

// SimpleHTTPRequestHandler as `python3 -m http.server` uses it; log_request runs in send_response, before
// the body goes out, so a request's line is in the log by the time its answer has arrived.
const PYTHON_SERVER = `
import functools, http.server, json, sys

port, directory, log_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
log = open(log_path, 'a', buffering=1, encoding='utf-8')

class Handler(http.server.SimpleHTTPRequestHandler):
    def log_request(self, code='-', size='-'):
        path = getattr(self, 'path', '') or ''
        try:
            file = self.translate_path(path)
        except Exception:
            file = ''
        headers = getattr(self, 'headers', None)
        try:
            status = int(code)
        except (TypeError, ValueError):
            status = 0
        admitted = headers is not None and headers.get('anteroom-admission') is not None
        log.write(json.dumps({'target': path, 'file': file, 'status': status, 'admitted': admitted}) + '\\n')
        super().log_request(code, size)

server = http.server.ThreadingHTTPServer(('127.0.0.1', port), functools.partial(Handler, directory=directory))
server.serve_forever()
`

/** Python's http.server on a free loopback port, serving a fresh document root. */
export async function startPythonOrigin(): Promise<StaticOrigin> {
  const docs = await makeDocRoot('python')
  const script = join(docs.dir, 'server.py')
  const logFile = join(docs.dir, 'access.jsonl')
  await writeFile(script, PYTHON_SERVER)
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  let stderr = ''
  const child = spawn('python3', [script, String(port), docs.root, logFile], { stdio: ['ignore', 'ignore', 'pipe'] })
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-16_384)
  })
  const spawned = new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve)
    child.once('error', reject)
  })
  await spawned
  const parse = (line: string) => JSON.parse(line) as OriginHit
  const log = () => readLog(logFile, parse)
  try {
    await waitServing(url, child, async () => stderr)
  } catch (err) {
    await stopChild(child)
    throw err
  }
  return {
    name: 'python',
    url,
    port,
    pid: child.pid as number,
    docs,
    hits: async () => (await log()).hits,
    settle: () => settleLog(url, log),
    async stop() {
      await stopChild(child)
      await rm(docs.dir, { recursive: true, force: true })
    },
  }
}
