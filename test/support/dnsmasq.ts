// A real DNS server for the crawler checks: Debian's dnsmasq (package dnsmasq-base, provisioned by npm
// test) on a free loopback port, answering only from the records a test gives it. Domains listed as
// local answer NXDOMAIN for names they lack; any other name is refused (no upstream), which a resolver
// reads as an error: both outcomes a test can ask for. Stopped by its pid.
import { type ChildProcess, spawn } from 'node:child_process'
import { Resolver } from 'node:dns/promises'
import { existsSync } from 'node:fs'
import { freePort } from './redis-server.js'

export const DNSMASQ = '/usr/sbin/dnsmasq'

export interface DnsRecords {
  /** A and AAAA records with their PTR records: [name, address]. */
  hosts?: [string, string][]
  /** PTR records alone: [address (IPv4), name]. */
  ptrs?: [string, string][]
  /** Domains answered from these records only: a name they lack is NXDOMAIN. */
  local?: string[]
}

export interface DnsServer {
  port: number
  /** host:port, as ANTEROOM_DNS_SERVER takes it. */
  address: string
  pid: number
  stop(): Promise<void>
}

function arpa(ipv4: string): string {
  return `${ipv4.split('.').reverse().join('.')}.in-addr.arpa`
}

export async function startDnsmasq(records: DnsRecords): Promise<DnsServer> {
  if (!existsSync(DNSMASQ)) throw new Error(`${DNSMASQ} is missing: apt-get install -y dnsmasq-base (npm test does this as root)`)
  const port = await freePort()
  const args = [
    '--keep-in-foreground',
    '--conf-file=/dev/null',
    `--port=${port}`,
    '--listen-address=127.0.0.1',
    '--bind-interfaces',
    '--no-resolv',
    '--no-hosts',
    '--no-negcache',
    '--local-ttl=300',
    '--pid-file=',
    ...(records.local ?? []).map((d) => `--local=/${d}/`),
    ...(records.hosts ?? []).map(([name, address]) => `--host-record=${name},${address}`),
    ...(records.ptrs ?? []).map(([address, name]) => `--ptr-record=${arpa(address)},${name}`),
  ]
  const child: ChildProcess = spawn(DNSMASQ, args, { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString()
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const probe = new Resolver({ timeout: 200, tries: 1 })
  probe.setServers([`127.0.0.1:${port}`])
  for (let i = 0; ; i++) {
    try {
      await probe.resolve4('probe.invalid')
      break
    } catch (err) {
      // Any DNS answer (refused, not found) says it listens; a timeout or a closed port does not.
      const code = (err as { code?: string }).code
      if (code === 'EREFUSED' || code === 'ENOTFOUND' || code === 'ENODATA' || code === 'ESERVFAIL') break
      if (i > 100 || child.exitCode !== null) {
        child.kill('SIGKILL')
        throw new Error(`dnsmasq did not start on port ${port}: ${stderr}`)
      }
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  const pid = child.pid as number
  return {
    port,
    address: `127.0.0.1:${port}`,
    pid,
    async stop() {
      if (child.exitCode === null) {
        process.kill(pid, 'SIGTERM')
        await exited
      }
    },
  }
}
