// DNS over HTTPS (the JSON form: GET ?name=&type= with Accept: application/dns-json) in front of a real
// DNS server (test/support/dnsmasq.ts), for the Worker's crawler checks: it asks the server with
// node:dns and writes its answers as Cloudflare's resolver does (Status 0 with Answer, 3 for NXDOMAIN,
// 5 for a refusal, 2 for anything else). It counts the questions it was asked.
import { Resolver } from 'node:dns/promises'
import { createServer, type Server } from 'node:http'

export interface DohBridge {
  url: string
  /** Questions asked, as "TYPE name". */
  asked: string[]
  close(): Promise<void>
}

const TYPE_CODES: Record<string, number> = { A: 1, AAAA: 28, PTR: 12 }

function statusOf(code: string | undefined): number {
  if (code === 'ENOTFOUND' || code === 'ENODATA') return 3
  if (code === 'EREFUSED') return 5
  return 2
}

export async function startDohBridge(dnsServer: string): Promise<DohBridge> {
  const dns = new Resolver({ timeout: 1000, tries: 1 })
  dns.setServers([dnsServer])
  const asked: string[] = []
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://bridge')
    const name = url.searchParams.get('name') ?? ''
    const type = url.searchParams.get('type') ?? ''
    asked.push(`${type} ${name}`)
    const answer = (body: unknown) => {
      res.setHeader('content-type', 'application/dns-json')
      res.end(JSON.stringify(body))
    }
    if (url.pathname !== '/dns-query' || TYPE_CODES[type] === undefined || req.headers.accept !== 'application/dns-json') {
      res.statusCode = 400
      res.end('bad question')
      return
    }
    const ask = type === 'A' ? dns.resolve4(name) : type === 'AAAA' ? dns.resolve6(name) : dns.resolvePtr(name)
    ask.then(
      (data: string[]) =>
        answer({
          Status: 0,
          Question: [{ name, type: TYPE_CODES[type] }],
          Answer: data.map((d) => ({ name, type: TYPE_CODES[type], TTL: 300, data: type === 'PTR' ? `${d}.` : d })),
        }),
      (err: { code?: string }) => answer({ Status: statusOf(err.code), Question: [{ name, type: TYPE_CODES[type] }] }),
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}/dns-query`,
    asked,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
