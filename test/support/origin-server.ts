// A real HTTP origin on a free loopback port for proxy tests: it echoes what it received.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'

export interface OriginServer {
  url: string
  port: number
  requests: { method: string; url: string; headers: IncomingMessage['headers']; bodyLength: number }[]
  close(): Promise<void>
}

export type OriginHandler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void

const echo: OriginHandler = (req, res, body) => {
  res.setHeader('content-type', 'application/json')
  res.setHeader('connection', 'keep-alive, x-secret-hop')
  res.setHeader('x-secret-hop', 'should not pass')
  res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, bodyLength: body.length }))
}

export async function startOrigin(handler: OriginHandler = echo): Promise<OriginServer> {
  const requests: OriginServer['requests'] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, bodyLength: body.length })
      handler(req, res, body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
