// The few Workers runtime types this project uses, declared here instead of pulling in
// @cloudflare/workers-types (whose globals clash with the DOM and Node types of the rest of the tree).

declare module 'cloudflare:workers' {
  export abstract class DurableObject<Env = unknown> {
    protected ctx: DurableObjectState
    protected env: Env
    constructor(ctx: DurableObjectState, env: Env)
  }
}

interface DurableObjectState {
  waitUntil(promise: Promise<unknown>): void
}

interface DurableObjectId {
  toString(): string
}

/** A binding to a Durable Object class; get() returns an RPC stub typed as the object itself. */
interface DurableObjectNamespace<T> {
  idFromName(name: string): DurableObjectId
  get(id: DurableObjectId): T
}

interface ExecutionContext {
  waitUntil(promise: Promise<unknown>): void
  passThroughOnException(): void
  props: unknown
}

interface ScheduledController {
  scheduledTime: number
  cron: string
}

/** Files bundled as text by the [[rules]] in wrangler.toml. */
declare module '*.html' {
  const text: string
  export default text
}
declare module '*.css' {
  const text: string
  export default text
}
