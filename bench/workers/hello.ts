// Baseline Worker for the Worker bench: a bare Hono hello-world, built and run in workerd like the edge.
import { Hono } from 'hono'

const app = new Hono()
app.get('/', (c) => c.text('Hello, world!'))

export default app
