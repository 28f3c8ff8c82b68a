// Redis clients on the shared test server (vitest's redisUrl), each disconnected after the file's tests.
import { Redis } from 'ioredis'
import { afterAll, inject } from 'vitest'

/** Returns a function that opens a client; all of them close when the calling test file is done. */
export function redisClients(): () => Redis {
  const clients: Redis[] = []
  afterAll(() => {
    for (const c of clients) c.disconnect()
  })
  return () => {
    const client = new Redis(inject('redisUrl'))
    clients.push(client)
    return client
  }
}
