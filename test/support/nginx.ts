// Debian's nginx (/usr/sbin/nginx, from nginx-light) as a static-file origin for path tests: a config in a
// fresh temp directory (pid, error log, temp paths and an access log there), one worker, listening on a free
// loopback port, started in the foreground (daemon off) as our own child and stopped by its pid. The access
// log is JSON lines: the request target as received ($request_uri), the file it resolved to
// ($request_filename), the status, and the Anteroom-Admission header.
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { freePort } from './redis-server.js'
import { makeDocRoot, type OriginHit, readLog, type StaticOrigin, settleLog, stopChild, waitServing } from './static-origins.js'

export const NGINX = '/usr/sbin/nginx'

/** The temp-path directives this nginx build knows (a build without, say, uwsgi refuses uwsgi_temp_path). */
function tempPathDirectives(): string[] {
  // nginx -V prints its configure arguments to stderr.
  const v = spawnSync(NGINX, ['-V'], { encoding: 'utf8' })
  const text = `${v.stdout ?? ''}${v.stderr ?? ''}`
  const out = ['client_body_temp_path']
  for (const [flag, directive] of [
    ['http_proxy_module', 'proxy_temp_path'],
    ['http_fastcgi_module', 'fastcgi_temp_path'],
    ['http_uwsgi_module', 'uwsgi_temp_path'],
    ['http_scgi_module', 'scgi_temp_path'],
  ] as const) {
    if (!text.includes(`--without-${flag}`)) out.push(directive)
  }
  return out
}

/** When we are root, nginx's workers run as nobody (and its group): name them, so the config says so. */
function workerUser(): string | undefined {
  if (process.getuid?.() !== 0) return undefined
  const group = execFileSync('id', ['-gn', 'nobody'], { encoding: 'utf8' }).trim()
  return `nobody ${group}`
}

/** The pids of a process's children (nginx's workers), from /proc. */
function childPids(pid: number): number[] {
  const out: number[] = []
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim()
      for (const p of text.split(/\s+/)) if (p !== '') out.push(Number(p))
    }
  } catch {}
  return out
}

interface NginxLine {
  target: string
  file: string
  status: string
  admission: string
}

export async function startNginx(): Promise<StaticOrigin> {
  if (!existsSync(NGINX)) throw new Error(`no ${NGINX} (install it with: apt-get install nginx-light)`)
  const docs = await makeDocRoot('nginx')
  const dir = docs.dir
  const tmp = join(dir, 'tmp')
  await mkdir(tmp)
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const accessLog = join(dir, 'access.jsonl')
  const errorLog = join(dir, 'error.log')
  const user = workerUser()
  const conf = join(dir, 'nginx.conf')
  await writeFile(
    conf,
    [
      'daemon off;',
      'master_process on;',
      'worker_processes 1;',
      ...(user ? [`user ${user};`] : []),
      `pid ${join(dir, 'nginx.pid')};`,
      `error_log ${errorLog} warn;`,
      'events { worker_connections 256; }',
      'http {',
      '  types { text/html html; text/plain txt; }',
      '  default_type text/plain;',
      '  server_tokens off;',
      `  log_format anteroom escape=json '{"target":"$request_uri","file":"$request_filename","status":"$status","admission":"$http_anteroom_admission"}';`,
      `  access_log ${accessLog} anteroom;`,
      ...tempPathDirectives().map((d) => `  ${d} ${join(tmp, d.replace(/_temp_path$/, ''))};`),
      '  server {',
      `    listen 127.0.0.1:${port};`,
      '    server_name _;',
      `    root ${docs.root};`,
      '    location / { }',
      '  }',
      '}',
      '',
    ].join('\n'),
  )
  // -e: the error log before the config is read (otherwise the compiled-in /var/log/nginx/error.log).
  const child = spawn(NGINX, ['-c', conf, '-p', dir, '-e', errorLog], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-16_384)
  })
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve)
    child.once('error', reject)
  })
  const parse = (line: string): OriginHit => {
    const l = JSON.parse(line) as NginxLine
    return { target: l.target, file: l.file, status: Number(l.status), admitted: l.admission !== '' }
  }
  const log = () => readLog(accessLog, parse)
  const describe = async () => `${stderr}\n${await readFile(errorLog, 'utf8').catch(() => '')}`
  const pid = child.pid as number
  try {
    await waitServing(url, child, describe)
  } catch (err) {
    await stopChild(child, () => childPids(pid))
    throw err
  }
  return {
    name: 'nginx',
    url,
    port,
    pid,
    docs,
    hits: async () => (await log()).hits,
    settle: () => settleLog(url, log),
    async stop() {
      await stopChild(child, () => childPids(pid))
      await rm(dir, { recursive: true, force: true })
    },
  }
}
