// A worker for test/support/primary-child.ts that exits at once, with code 3: a crash loop.
process.stdout.write(`${JSON.stringify({ event: 'worker_ran', worker: process.env.ANTEROOM_WORKER, pid: process.pid })}\n`)
process.exit(3)
