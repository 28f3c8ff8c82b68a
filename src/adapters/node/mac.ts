// Queue-token MAC with node:crypto: synchronous and about 8 µs, against ~50 µs for a JWT.
import { createHmac } from 'node:crypto'
import type { Mac } from '../../ports/crypto.js'

export function nodeMac(secret: string): Mac {
  return { sign: (data) => createHmac('sha256', secret).update(data).digest('base64url') }
}
